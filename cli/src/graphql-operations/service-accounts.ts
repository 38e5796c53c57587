/** The CLI's GraphQL documents (with-fragments.ts says how they are read): service accounts: listed, created, deleted. */
import { withFragments } from "./with-fragments";

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
