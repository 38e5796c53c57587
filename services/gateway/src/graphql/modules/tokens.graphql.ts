import type { GraphQLContext } from "../context";
import type { CreateTokenInput, ListTokensInput } from "../../tokens/token.service";

export const tokenTypeDefs = /* GraphQL */ `
  enum AccessTokenType {
    PERSONAL
  }

  "1h, 24h, 7d, 30d, 90d, 180d, 365d, or never (only where ACCESS_TOKEN_ALLOW_NO_EXPIRY=true)."
  enum AccessTokenDuration {
    ONE_HOUR
    ONE_DAY
    ONE_WEEK
    ONE_MONTH
    THREE_MONTHS
    SIX_MONTHS
    ONE_YEAR
    NO_EXPIRY
  }

  "Input of createAccessToken. CreateAccessTokenInput is accepted as another name for it."
  input GetAccessTokenInput {
    type: AccessTokenType!
    "The user the token acts for."
    actorUrn: String!
    duration: AccessTokenDuration!
    name: String!
    description: String
  }

  type AccessToken {
    "The token itself. Returned once, never again."
    accessToken: String!
    metadata: AccessTokenMetadata!
  }

  type AccessTokenMetadata {
    urn: String!
    "Give this to revokeAccessToken as tokenId."
    id: String!
    name: String!
    description: String
    "Whom the token acts for."
    actorUrn: String!
    "Who created it."
    ownerUrn: String!
    createdAt: Long!
    "null: never expires"
    expiresAt: Long
    "Updated within a few seconds of each use."
    lastUsedAt: Long
  }

  input FacetFilterInput {
    "actorUrn, ownerUrn, name or id"
    field: String!
    value: String
    values: [String!]
  }

  input ListAccessTokenInput {
    start: Int = 0
    "At most 1000."
    count: Int = 20
    filters: [FacetFilterInput!]
  }

  type ListAccessTokenResult {
    start: Int!
    count: Int!
    total: Int!
    "Newest first; expired and revoked tokens are not listed."
    tokens: [AccessTokenMetadata!]!
  }

  extend type Query {
    listAccessTokens(input: ListAccessTokenInput!): ListAccessTokenResult!
    "A live token's metadata: an expired or unknown token is NOT_FOUND, and so is a revoked one, saying so."
    getAccessTokenMetadata(token: String!): AccessTokenMetadata!
  }

  extend type Mutation {
    createAccessToken(input: GetAccessTokenInput!): AccessToken
    "true once the token is revoked; an error says why it could not be."
    revokeAccessToken(tokenId: String!): Boolean!
  }
`;

export const tokenResolvers = {
  Query: {
    listAccessTokens: (_: unknown, args: { input: ListTokensInput }, ctx: GraphQLContext) =>
      ctx.services.tokens.list(ctx.actor, args.input),
    getAccessTokenMetadata: (_: unknown, args: { token: string }, ctx: GraphQLContext) =>
      ctx.services.tokens.metadataFor(ctx.actor, args.token),
  },
  Mutation: {
    // Rate-limited by the token service, once the request has passed its checks.
    createAccessToken: (_: unknown, args: { input: CreateTokenInput }, ctx: GraphQLContext) =>
      ctx.services.tokens.create(ctx.actor, args.input),
    revokeAccessToken: (_: unknown, args: { tokenId: string }, ctx: GraphQLContext) =>
      ctx.services.tokens.revoke(ctx.actor, args.tokenId),
  },
};
