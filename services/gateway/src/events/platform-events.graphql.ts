import { resolver } from "../graphql/resolver";
import { listPlatformEventsArgs } from "./platform-events.service";

export const platformEventsTypeDefs = /* GraphQL */ `
  "A platform event (docs/events.md): DataHub's PlatformEvent kinds, MetadataChangeLog_v1 and EntityChangeEvent_v1."
  type PlatformEvent {
    "Its position in the stream (commit order); pass the page's next, not this, as since."
    seq: String!
    "MetadataChangeLog_v1 or EntityChangeEvent_v1."
    eventType: String!
    "An EntityChangeEvent_v1's category (ACCESS_TOKEN, TASK, TEST_RESULT, SCHEDULE); null for a MetadataChangeLog_v1."
    category: String
    "An EntityChangeEvent_v1's operation (CREATE, ROTATE, REVOKE, EXPIRING_SOON, COMPLETE, FAIL, CANCEL, PASS, SUSPEND)."
    operation: String
    entityType: String!
    entityUrn: String!
    "When it was written (epoch ms)."
    createdAt: Long!
    "The event's record as JSON text (at most 4 KiB): DataHub's EntityChangeEvent or MetadataChangeLog fields."
    payload: String!
  }

  "A page of the platform-event stream."
  type PlatformEventPage {
    "The events after since that the caller may read now, in stream order."
    events: [PlatformEvent!]!
    "Pass as since next time: past every event read, including those the caller may not read."
    next: String!
    "The oldest position still kept (null: none). A since lower than oldest - 1 means events were pruned unread."
    oldest: String
  }

  extend type Query {
    """
    The platform-event stream with a cursor, so a consumer that was down catches up: the events after since (absent:
    from the oldest kept), at most count (default 100, at most 1000) and 4 MiB of payloads, each one the caller may
    read now (its own token, task and schedule events with what reading them needs; others by privilege: docs/events.md
    "Who reads what"). Each
    call reads at most 10,000 events of the stream; next moves past them all.
    """
    listPlatformEvents(
      "The cursor: the previous page's next; absent, from the oldest event kept."
      since: String
      "How many events to return at most, 1 to 1000 (default 100)."
      count: Int
      "Only events of these types: MetadataChangeLog_v1, EntityChangeEvent_v1."
      eventTypes: [String!]
      "Only events of these categories, e.g. ACCESS_TOKEN, TASK, TEST_RESULT."
      categories: [String!]
      "Only events about this entity's urn."
      entityUrn: String
    ): PlatformEventPage!
  }
`;

export const platformEventsResolvers = {
  Query: {
    // Any caller: each sees only the events it may read now (the service filters them).
    listPlatformEvents: resolver({ requires: null, args: listPlatformEventsArgs }, (s, actor, args) =>
      s.platformEvents.list(actor, args),
    ),
  },
};
