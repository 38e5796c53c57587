import { z } from "zod";
import type { GraphQLContext } from "../graphql/context";
import { needs, resolver } from "../graphql/resolver";
import { corpUserOf } from "../shared/corp-user";
import { listTokensArgs, revokeTokenArgs, revokeTokensArgs, tokenMetadataArgs } from "./token.service";

export const tokenTypeDefs = /* GraphQL */ `
  """
  PERSONAL: a user's token. SERVICE_ACCOUNT: a service account's (actorUrn a live service account), minted by a holder
  of MANAGE_SERVICE_ACCOUNTS (its ownerUrn): at every use it holds the account's current grants, within its scopes,
  the token it was created with and its minter's current grants.
  """
  enum AccessTokenType {
    PERSONAL
    SERVICE_ACCOUNT
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

  """
  Input of createAccessToken and of the deprecated getAccessToken. CreateAccessTokenInput is accepted as another name
  for it. name is required by createAccessToken (BAD_USER_INPUT without it); getAccessToken, whose DataHub input has
  no name, names the token "getAccessToken" when none is given.
  """
  input GetAccessTokenInput {
    type: AccessTokenType!
    "The user the token acts for."
    actorUrn: String!
    """
    Exactly one of duration and durationIso (both or neither: BAD_USER_INPUT). Either way the lifetime must be one of
    ACCESS_TOKEN_ALLOWED_DURATIONS (the enum's values count as PT1H, P1D, P7D, P30D, P90D, P180D, P365D).
    """
    duration: AccessTokenDuration
    "The lifetime as ISO-8601, e.g. PT1H, P30D (P1M counts 30 days, P1Y 365)."
    durationIso: String
    name: String
    description: String
    """
    Limits the token to these privileges of its actor (privilege names, ours or DataHub's spelling; 1 to 32 of them):
    every request made with it may use only these, with what they imply, and only while its actor holds them. Each
    must be held by the actor now (FORBIDDEN otherwise); an unknown name or an empty list is BAD_USER_INPUT. Absent:
    the token has all of its actor's privileges, or, when created with a scoped token, that token's scopes (a scoped
    token never creates a token wider than itself).
    """
    scopes: [String!]
  }

  "DataHub's entity types; an access token's type is ACCESS_TOKEN, a user's CORP_USER."
  enum EntityType {
    ACCESS_TOKEN
    CORP_USER
  }

  """
  DataHub's CorpUser, as far as this service knows one: its urn, and the username the urn names. It holds no user
  profile, so properties, editableProperties and info are null (DataHub's clients then show the username).
  """
  type CorpUser {
    urn: String!
    "Always CORP_USER."
    type: EntityType!
    username: String!
    properties: CorpUserProperties
    editableProperties: CorpUserEditableProperties
    info: CorpUserInfo
  }

  "Always null here (no user profiles are held); the shape of DataHub's, for its clients' documents."
  type CorpUserProperties {
    displayName: String
    fullName: String
    firstName: String
    lastName: String
    email: String
    title: String
  }

  "Always null here (no user profiles are held); the shape of DataHub's, for its clients' documents."
  type CorpUserEditableProperties {
    displayName: String
    pictureLink: String
    email: String
    title: String
  }

  "Always null here (no user profiles are held); DataHub's deprecated user info, for its clients' documents."
  type CorpUserInfo {
    displayName: String
    fullName: String
    firstName: String
    lastName: String
    email: String
    title: String
  }

  type AccessToken {
    "The token itself. Returned once, never again."
    accessToken: String!
    metadata: AccessTokenMetadata!
  }

  type AccessTokenMetadata {
    urn: String!
    "Always ACCESS_TOKEN (DataHub's Entity.type)."
    type: EntityType!
    "Give this to revokeAccessToken as tokenId."
    id: String!
    name: String!
    description: String
    "Whom the token acts for."
    actorUrn: String!
    "Who created it: at every use the token holds only privileges this user also holds then."
    ownerUrn: String!
    "Who created it, as DataHub's CorpUser (what DataHub's web app selects)."
    owner: CorpUser
    createdAt: Long!
    "null: never expires"
    expiresAt: Long
    "Updated within a few seconds of each use."
    lastUsedAt: Long
    "The privileges the token is limited to (sorted, as stored), null for an unscoped token: all of its actor's."
    scopes: [String!]
    """
    The id of the access token its owner authenticated with when creating it (this service's extension), null when
    created otherwise (the system client). At every use the token holds no more than that token holds then, and it
    expires no later; it stops working when that token is revoked or expires.
    """
    parentTokenId: String
    "The token this one was rotated from (rotateAccessToken), null when it was created otherwise."
    rotatedFromId: String
    """
    The token this one was rotated into, null while it has not been rotated. A rotated-out token works until its
    expiresAt (the end of the grace window); used after that, it revokes every token rotated from the same first one.
    """
    rotatedToId: String
    "When it was rotated out, epoch ms; null while it has not been."
    rotatedAt: Long
    """
    What the token is used for (recorded in batches, within a few seconds of each use): the last few clients, and
    requests by operation over the last 30 days.
    """
    usage: AccessTokenUsage!
  }

  "A client that used an access token: its address as the gateway saw it, its User-Agent, and when it last did."
  type AccessTokenClient {
    ip: String!
    "Empty when the client sent none; cut to 256 characters."
    userAgent: String!
    lastSeenAt: Long!
  }

  """
  Requests made with an access token in the last 30 days for one operation: a GraphQL root field (Query.me,
  Mutation.createAccessToken) or an HTTP route and action (POST /gms/operations?action=truncate).
  """
  type AccessTokenOperationCount {
    operation: String!
    count: Long!
  }

  type AccessTokenUsage {
    "The last few (at most 5) distinct address and user agent pairs that used the token, most recent first."
    clients: [AccessTokenClient!]!
    "Requests in the last 30 days (UTC days, today included) by operation, most first."
    operations: [AccessTokenOperationCount!]!
    "Requests in the last 30 days, all operations."
    total: Long!
  }

  """
  A filter of listAccessTokens. EQUAL (the default) on actorUrn, ownerUrn, name or id matches any of the values, or
  none of them with negated; outsideDurationPolicy, value 'true' ('false'), selects the tokens whose lifetime the
  current ACCESS_TOKEN_ALLOWED_DURATIONS (ACCESS_TOKEN_ALLOW_NO_EXPIRY for a token that never expires) does not (does)
  allow; unusedForDays, value N (1 to 36500), selects the tokens neither used nor created in the last N days;
  LESS_THAN, LESS_THAN_OR_EQUAL_TO, GREATER_THAN or GREATER_THAN_OR_EQUAL_TO on expiresAt
  or createdAt compare with one value, epoch milliseconds as a string. Any other combination is BAD_USER_INPUT.
  """
  input FacetFilterInput {
    field: String!
    "DataHub's older single value; values wins when it holds any."
    value: String
    values: [String!]
    negated: Boolean
    condition: FilterOperator
  }

  "DataHub's filter conditions; which ones a filter may use is said where it is accepted."
  enum FilterOperator {
    CONTAIN
    EQUAL
    IEQUAL
    IN
    EXISTS
    GREATER_THAN
    GREATER_THAN_OR_EQUAL_TO
    LESS_THAN
    LESS_THAN_OR_EQUAL_TO
    START_WITH
    END_WITH
    DESCENDANTS_INCL
    ANCESTORS_INCL
    RELATED_INCL
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
    "Newest first. Revoked tokens are never listed; expired ones only when a filter on expiresAt asks for them."
    tokens: [AccessTokenMetadata!]!
  }

  extend type Query {
    "Deprecated (as in DataHub): creates a token as createAccessToken does, and is rate-limited alike."
    getAccessToken("As createAccessToken's input." input: GetAccessTokenInput!): AccessToken
      @deprecated(reason: "Use createAccessToken")
    """
    Live access tokens, newest first, filtered by field (actorUrn, ownerUrn, name, id, unusedForDays,
    outsideDurationPolicy). Your own with GENERATE_PERSONAL_ACCESS_TOKENS; anyone's with MANAGE_ACCESS_TOKENS.
    """
    listAccessTokens("The page (start, count) and the filters." input: ListAccessTokenInput!): ListAccessTokenResult!
    "A live token's metadata: an expired or unknown token is NOT_FOUND, and so is a revoked one, saying so."
    getAccessTokenMetadata("The access token itself (its JWT), not its id." token: String!): AccessTokenMetadata!
  }

  extend type Mutation {
    """
    Mints an access token and answers it once (only a salted hash is kept). It never holds more than the caller, nor
    outlives the token it was created with. For yourself, GENERATE_PERSONAL_ACCESS_TOKENS; for another user,
    MANAGE_ACCESS_TOKENS; for a service account, MANAGE_SERVICE_ACCOUNTS. Rate-limited per caller.
    """
    createAccessToken(
      "Type, actor, duration, name, and optionally description and scopes."
      input: GetAccessTokenInput!
    ): AccessToken
    """
    true once the token is revoked; an error says why it could not be. The work set through it, or through a token
    created with it (scheduled tests, tests with actions or evaluation on change, retention policies, webhook
    subscriptions), is suspended or turned off with it, as by every revocation.
    """
    revokeAccessToken("The token's id (AccessTokenMetadata.id)." tokenId: String!): Boolean!
    """
    Revokes every live token acting for the user at once (one transaction), refused on every gateway replica within
    1 s; returns how many. The user itself may, anyone else needs MANAGE_ACCESS_TOKENS.
    """
    revokeAccessTokens("The user whose tokens to revoke." actorUrn: String!): Int!
    """
    Revokes every live token, of any user, whose lifetime the current ACCESS_TOKEN_ALLOWED_DURATIONS (or, never
    expiring, ACCESS_TOKEN_ALLOW_NO_EXPIRY) does not allow, i.e. what listAccessTokens' outsideDurationPolicy filter
    lists; refused on every gateway replica within 1 s. Returns their ids. Needs MANAGE_ACCESS_TOKENS.
    """
    revokeAccessTokensOutsidePolicy: [String!]!
    """
    Mints a successor of the token with its name, description, scopes, actor and lifetime (counted from now, never
    past ACCESS_TOKEN_FAMILY_MAX_DAYS after the first token it was rotated from was created), and returns it once;
    the token keeps working for graceSeconds (0, the default, to 86400), then is refused. A rotated-out token used
    after its grace window revokes every token rotated from the same first one (suspected theft, audited). A token may
    rotate itself (no privilege needed: its successor keeps its creator and parent, and holds exactly what it held);
    rotating another needs what minting it would (GENERATE_PERSONAL_ACCESS_TOKENS; another user's,
    MANAGE_ACCESS_TOKENS), and its successor is the caller's as createAccessToken's would be (created by the caller,
    with the token in use as its parent, expiring no later). A token rotates once: rotate its successor next.
    """
    rotateAccessToken(
      "The id of the token to rotate."
      tokenId: String!
      "How long the old token keeps working, 0 (the default) to 86400 seconds."
      graceSeconds: Int
    ): AccessToken!
  }
`;

/** The token API's privilege, named "to <to>" in a refusal. */
const tokenApi = (to: string) => needs("GENERATE_PERSONAL_ACCESS_TOKENS", to);

export const tokenResolvers = {
  AccessTokenMetadata: {
    type: () => "ACCESS_TOKEN",
    owner: (token: { ownerUrn: string }) => corpUserOf(token.ownerUrn),
    rotatedFromId: (token: { rotatedFromId?: string | null }) => token.rotatedFromId ?? null,
    rotatedToId: (token: { rotatedToId?: string | null }) => token.rotatedToId ?? null,
    rotatedAt: (token: { rotatedAt?: number | null }) => token.rotatedAt ?? null,
    usage: (token: { id: string }, _args: unknown, ctx: GraphQLContext) =>
      ctx.services.tokenUsage.loaderFor(ctx)(token.id),
  },
  // An operation whose privilege depends on its arguments (minting: for whom, of which type; rotating: whose token)
  // has its service check it; the others declare it here, with their contract.
  Query: {
    getAccessToken: (_: unknown, args: { input: { name?: string | null } }, ctx: GraphQLContext) =>
      ctx.services.tokens.create(ctx.actor, { input: { ...args.input, name: args.input.name ?? "getAccessToken" } }),
    listAccessTokens: resolver({ requires: tokenApi("list access tokens"), args: listTokensArgs }, (s, actor, args) =>
      s.tokens.list(actor, args),
    ),
    getAccessTokenMetadata: resolver(
      { requires: tokenApi("read access token metadata"), args: tokenMetadataArgs },
      (s, actor, args) => s.tokens.metadataFor(actor, args),
    ),
  },
  Mutation: {
    // Rate-limited by the token service, once the request has passed its checks.
    createAccessToken: (_: unknown, args: unknown, ctx: GraphQLContext) => ctx.services.tokens.create(ctx.actor, args),
    revokeAccessToken: resolver(
      { requires: tokenApi("revoke access tokens"), args: revokeTokenArgs },
      (s, actor, args) => s.tokens.revoke(actor, args),
    ),
    revokeAccessTokens: resolver(
      { requires: tokenApi("revoke access tokens"), args: revokeTokensArgs },
      (s, actor, args) => s.tokens.revokeAll(actor, args),
    ),
    revokeAccessTokensOutsidePolicy: resolver(
      { requires: needs("MANAGE_ACCESS_TOKENS", "revoke the access tokens of other users"), args: z.object({}) },
      (s, actor) => s.tokens.revokeOutsidePolicy(actor),
    ),
    // Rate-limited as createAccessToken, once the request has passed its checks.
    rotateAccessToken: (_: unknown, args: unknown, ctx: GraphQLContext) =>
      ctx.services.tokenRotation.rotate(ctx.actor, args),
  },
};
