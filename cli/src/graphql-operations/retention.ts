/** The CLI's GraphQL documents (with-fragments.ts says how they are read): retention policies: created, listed, updated, deleted, run. */
import { withFragments } from "./with-fragments";

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
