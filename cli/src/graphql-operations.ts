/**
 * Every GraphQL document the CLI sends. `pnpm cli:types` reads the `/* GraphQL *\/` texts below and writes their
 * result and variable types to generated/graphql.ts (against docs/api/schema.graphql), so the commands read the
 * answers by the server's own schema. A text holds no `${}`: the generator reads it as written, so a document that
 * shares fields names a fragment and appends the fragment's text.
 */

/** A document with the fragments it spreads: a document that spreads a fragment must define it. */
const withFragments = (document: string, ...fragments: string[]) => document + fragments.join("");

const TOKEN_FIELDS = /* GraphQL */ `
  fragment TokenFields on AccessTokenMetadata {
    urn
    id
    name
    description
    actorUrn
    ownerUrn
    createdAt
    expiresAt
    lastUsedAt
    scopes
  }
`;

const POLICY_FIELDS = /* GraphQL */ `
  fragment RetentionPolicyFields on RetentionPolicy {
    urn
    entityType
    aspect
    retainDays
    cron
    nextRunTime
    lastTaskId
    lastTaskState
    createdBy
    ownerUrn
    suspendedAt
    suspendedReason
    createdAt
    updatedAt
  }
`;

export const ME = /* GraphQL */ `
  query Me {
    me {
      urn
      privileges
    }
  }
`;

export const CREATE_ACCESS_TOKEN = withFragments(
  /* GraphQL */ `
    mutation CreateAccessToken($input: GetAccessTokenInput!) {
      createAccessToken(input: $input) {
        accessToken
        metadata {
          ...TokenFields
        }
      }
    }
  `,
  TOKEN_FIELDS,
);

export const LIST_ACCESS_TOKENS = withFragments(
  /* GraphQL */ `
    query ListAccessTokens($input: ListAccessTokenInput!) {
      listAccessTokens(input: $input) {
        start
        count
        total
        tokens {
          ...TokenFields
        }
      }
    }
  `,
  TOKEN_FIELDS,
);

export const REVOKE_ACCESS_TOKEN = /* GraphQL */ `
  mutation RevokeAccessToken($id: String!) {
    revokeAccessToken(tokenId: $id)
  }
`;

export const REVOKE_ACCESS_TOKENS = /* GraphQL */ `
  mutation RevokeAccessTokens($a: String!) {
    revokeAccessTokens(actorUrn: $a)
  }
`;

export const ROTATE_ACCESS_TOKEN = withFragments(
  /* GraphQL */ `
    mutation RotateAccessToken($id: String!, $grace: Int) {
      rotateAccessToken(tokenId: $id, graceSeconds: $grace) {
        accessToken
        metadata {
          ...TokenFields
          rotatedFromId
        }
      }
    }
  `,
  TOKEN_FIELDS,
);

export const ACCESS_TOKEN_USAGE = /* GraphQL */ `
  query AccessTokenUsage($input: ListAccessTokenInput!) {
    listAccessTokens(input: $input) {
      tokens {
        id
        name
        actorUrn
        lastUsedAt
        rotatedFromId
        rotatedToId
        rotatedAt
        usage {
          total
          clients {
            ip
            userAgent
            lastSeenAt
          }
          operations {
            operation
            count
          }
        }
      }
    }
  }
`;

export const CREATE_TEST = /* GraphQL */ `
  mutation CreateTest($input: CreateTestInput!) {
    createTest(input: $input)
  }
`;

export const LIST_TESTS = /* GraphQL */ `
  query ListTests($input: ListTestsInput!) {
    listTests(input: $input) {
      start
      count
      total
      tests {
        urn
        name
        category
        description
        state
        onTypes
        schedule {
          cron
          nextRunAt
          suspendedAt
        }
        createdBy
        ownerUrn
        updatedAt
      }
    }
  }
`;

export const TEST_RESULT_HISTORY = /* GraphQL */ `
  query TestResultHistory($urn: String!, $testUrn: String!, $start: Int, $count: Int) {
    testResultHistory(urn: $urn, testUrn: $testUrn, start: $start, count: $count) {
      start
      count
      total
      transitions {
        type
        previousType
        at
      }
    }
  }
`;

export const TEST_RUN_DIFF = /* GraphQL */ `
  query TestRunDiff($testUrn: String!, $runId: String) {
    testRunDiff(testUrn: $testUrn, runId: $runId) {
      testUrn
      runId
      previousRunId
      startedAt
      baselineAt
      lastBatchAt
      evaluated
      flapChanges
      flapRuns
      flapSince
      newlyFailing {
        ...RunDiffEntities
      }
      newlyPassing {
        ...RunDiffEntities
      }
      flapping {
        ...RunDiffEntities
      }
    }
  }
  fragment RunDiffEntities on TestRunDiffEntities {
    total
    truncated
    entities {
      urn
      type
      previousType
      changes
    }
  }
`;

export const PREVIEW_TEST_IMPACT = /* GraphQL */ `
  query PreviewTestImpact($urn: String!, $json: String!, $sampleSize: Int) {
    previewTestImpact(urn: $urn, definition: { json: $json }, sampleSize: $sampleSize) {
      testUrn
      evaluatedAt
      total
      sampled
      sampleSize
      whole
      passToFail {
        count
        examples
      }
      failToPass {
        count
        examples
      }
      startsApplying
      stopsApplying
      unchangedPassing
      unchangedFailing
      actions {
        on
        type
        params
        entities
        newly
      }
    }
  }
`;

export const CREATE_RETENTION_POLICY = withFragments(
  /* GraphQL */ `
    mutation CreateRetentionPolicy($input: CreateRetentionPolicyInput!) {
      createRetentionPolicy(input: $input) {
        ...RetentionPolicyFields
      }
    }
  `,
  POLICY_FIELDS,
);

export const LIST_RETENTION_POLICIES = withFragments(
  /* GraphQL */ `
    query ListRetentionPolicies($input: ListRetentionPoliciesInput!) {
      listRetentionPolicies(input: $input) {
        start
        count
        total
        retentionPolicies {
          ...RetentionPolicyFields
        }
      }
    }
  `,
  POLICY_FIELDS,
);

export const UPDATE_RETENTION_POLICY = withFragments(
  /* GraphQL */ `
    mutation UpdateRetentionPolicy($urn: String!, $input: UpdateRetentionPolicyInput!) {
      updateRetentionPolicy(urn: $urn, input: $input) {
        ...RetentionPolicyFields
      }
    }
  `,
  POLICY_FIELDS,
);

export const DELETE_RETENTION_POLICY = /* GraphQL */ `
  mutation DeleteRetentionPolicy($urn: String!) {
    deleteRetentionPolicy(urn: $urn)
  }
`;

export const RUN_RETENTION_POLICY = /* GraphQL */ `
  mutation RunRetentionPolicy($urn: String!, $dryRun: Boolean) {
    runRetentionPolicy(urn: $urn, dryRun: $dryRun)
  }
`;

const SERVICE_ACCOUNT_FIELDS = /* GraphQL */ `
  fragment ServiceAccountFields on ServiceAccount {
    urn
    name
    displayName
    description
    createdBy
    createdAt
    lastUsedAt
  }
`;

export const LIST_SERVICE_ACCOUNTS = withFragments(
  /* GraphQL */ `
    query ListServiceAccounts($input: ListServiceAccountsInput!) {
      listServiceAccounts(input: $input) {
        start
        count
        total
        serviceAccounts {
          ...ServiceAccountFields
        }
      }
    }
  `,
  SERVICE_ACCOUNT_FIELDS,
);

export const CREATE_SERVICE_ACCOUNT = withFragments(
  /* GraphQL */ `
    mutation CreateServiceAccount($input: CreateServiceAccountInput!) {
      createServiceAccount(input: $input) {
        ...ServiceAccountFields
      }
    }
  `,
  SERVICE_ACCOUNT_FIELDS,
);

export const DELETE_SERVICE_ACCOUNT = /* GraphQL */ `
  mutation DeleteServiceAccount($urn: String!) {
    deleteServiceAccount(urn: $urn)
  }
`;

const WEBHOOK_FIELDS = /* GraphQL */ `
  fragment WebhookFields on WebhookSubscription {
    id
    ownerUrn
    url
    eventTypes
    categories
    entityUrn
    actorUrn
    testUrn
    description
    active
    disabledReason
    createdAt
  }
`;

export const CREATE_WEBHOOK = withFragments(
  /* GraphQL */ `
    mutation CreateWebhook($input: CreateWebhookSubscriptionInput!) {
      createWebhookSubscription(input: $input) {
        secret
        subscription {
          ...WebhookFields
        }
      }
    }
  `,
  WEBHOOK_FIELDS,
);

export const LIST_WEBHOOKS = withFragments(
  /* GraphQL */ `
    query ListWebhooks($input: ListWebhookSubscriptionsInput) {
      listWebhookSubscriptions(input: $input) {
        total
        subscriptions {
          ...WebhookFields
        }
      }
    }
  `,
  WEBHOOK_FIELDS,
);

export const UPDATE_WEBHOOK = withFragments(
  /* GraphQL */ `
    mutation UpdateWebhook($input: UpdateWebhookSubscriptionInput!) {
      updateWebhookSubscription(input: $input) {
        ...WebhookFields
      }
    }
  `,
  WEBHOOK_FIELDS,
);

export const DELETE_WEBHOOK = /* GraphQL */ `
  mutation DeleteWebhook($id: String!) {
    deleteWebhookSubscription(id: $id)
  }
`;

export const LIST_WEBHOOK_DELIVERIES = /* GraphQL */ `
  query ListWebhookDeliveries($input: ListWebhookDeliveriesInput!) {
    listWebhookDeliveries(input: $input) {
      total
      deliveries {
        id
        eventId
        eventType
        generation
        status
        attempts
        responseStatus
        durationMs
        error
        createdAt
        deliveredAt
        nextAttemptAt
      }
    }
  }
`;

export const ROTATE_WEBHOOK_SECRET = /* GraphQL */ `
  mutation RotateWebhookSecret($id: String!, $overlapSeconds: Int!) {
    rotateWebhookSecret(id: $id, overlapSeconds: $overlapSeconds) {
      secret
      subscription {
        id
        previousSecretExpiresAt
      }
    }
  }
`;

export const REPLAY_WEBHOOK_DELIVERIES = /* GraphQL */ `
  mutation ReplayWebhookDeliveries($input: ReplayWebhookDeliveriesInput!) {
    replayWebhookDeliveries(input: $input) {
      replayed
      deliveryIds
    }
  }
`;

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

const ACCESS_POLICY_FIELDS = /* GraphQL */ `
  fragment PolicyFields on Policy {
    urn
    type
    name
    description
    state
    privileges
    actors {
      users
      groups
      allUsers
    }
    editable
  }
`;

export const LIST_POLICIES = withFragments(
  /* GraphQL */ `
    query ListPolicies($input: ListPoliciesInput!) {
      listPolicies(input: $input) {
        start
        count
        total
        policies {
          ...PolicyFields
        }
      }
    }
  `,
  ACCESS_POLICY_FIELDS,
);

export const CREATE_POLICY = /* GraphQL */ `
  mutation CreatePolicy($input: PolicyUpdateInput!) {
    createPolicy(input: $input)
  }
`;

export const DELETE_POLICY = /* GraphQL */ `
  mutation DeletePolicy($urn: String!) {
    deletePolicy(urn: $urn)
  }
`;

export const TEST = /* GraphQL */ `
  query Test($urn: String!) {
    test(urn: $urn) {
      urn
      name
      category
      description
    }
  }
`;

export const UPDATE_TEST = /* GraphQL */ `
  mutation UpdateTest($urn: String!, $input: UpdateTestInput!) {
    updateTest(urn: $urn, input: $input)
  }
`;
