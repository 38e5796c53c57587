/** The CLI's GraphQL documents (with-fragments.ts says how they are read): the platform event stream. */

export const LIST_PLATFORM_EVENTS = /* GraphQL */ `
  query ListPlatformEvents(
    $since: String
    $count: Int
    $eventTypes: [String!]
    $categories: [String!]
    $entityUrn: String
  ) {
    listPlatformEvents(
      since: $since
      count: $count
      eventTypes: $eventTypes
      categories: $categories
      entityUrn: $entityUrn
    ) {
      events {
        seq
        eventType
        category
        operation
        entityType
        entityUrn
        createdAt
        payload
      }
      next
      oldest
    }
  }
`;
