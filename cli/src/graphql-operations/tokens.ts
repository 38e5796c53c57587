/** The CLI's GraphQL documents (with-fragments.ts says how they are read): access tokens: created, listed, revoked, rotated, and what each is used for. */
import { withFragments } from "./with-fragments";

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
