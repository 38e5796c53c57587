/** The CLI's GraphQL documents (with-fragments.ts says how they are read): access policies: listed, created, deleted. */
import { withFragments } from "./with-fragments";

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
