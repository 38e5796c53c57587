/** The authorization matrix's rows (principals.ts's `Row`) for who may call what about access: the caller itself, platform events, tokens, service accounts, policies, groups, audit. */
import { createToken, ROOT, systemClientHeaders } from "../gateway-harness";
import { CREATE, credentialScopes, gql, OTHER_USER, POLICY_USER, tokenInput, type Row } from "./principals";

export const ACCESS_ROWS: Row[] = [
  { operation: "Query.me", needs: null, call: gql(`{ me { urn } }`) },
  // Any caller reads the stream; each event is filtered by what it may read (platform-events.int.spec.ts).
  {
    operation: "Query.listPlatformEvents",
    needs: null,
    call: gql(`{ listPlatformEvents(count: 5) { events { seq } next oldest } }`),
  },
  // Tokens
  {
    operation: "Mutation.createAccessToken",
    use: "for yourself",
    needs: "GENERATE_PERSONAL_ACCESS_TOKENS",
    call: gql(CREATE, (c) => ({ i: tokenInput(c.urn) })),
  },
  {
    operation: "Mutation.createAccessToken",
    use: "for another user",
    needs: "MANAGE_ACCESS_TOKENS",
    call: gql(CREATE, () => ({ i: tokenInput(OTHER_USER) })),
  },
  {
    operation: "Query.getAccessToken",
    needs: "GENERATE_PERSONAL_ACCESS_TOKENS",
    call: gql(`query($i: GetAccessTokenInput!) { getAccessToken(input: $i) { accessToken } }`, (c) => ({
      i: tokenInput(c.urn),
    })),
  },
  {
    operation: "Query.getAccessTokenMetadata",
    use: "of another user's token",
    needs: "MANAGE_ACCESS_TOKENS",
    call: gql(`query($t: String!) { getAccessTokenMetadata(token: $t) { id } }`, async (_c, f) => ({
      t: (await f.ownTokenOf({ urn: OTHER_USER, headers: {} })).token,
    })),
  },
  {
    operation: "Query.listAccessTokens",
    use: "your own",
    needs: "GENERATE_PERSONAL_ACCESS_TOKENS",
    call: gql(
      `query($u: String!) { listAccessTokens(input: {filters: [{field: "actorUrn", value: $u}]}) { total } }`,
      (c) => ({ u: c.urn }),
    ),
  },
  {
    operation: "Query.listAccessTokens",
    use: "everyone's",
    needs: "MANAGE_ACCESS_TOKENS",
    call: gql(`{ listAccessTokens(input: {}) { total } }`),
  },
  {
    operation: "Mutation.revokeAccessToken",
    use: "another user's",
    needs: "MANAGE_ACCESS_TOKENS",
    call: gql(`mutation($t: String!) { revokeAccessToken(tokenId: $t) }`, async (_c, f) => ({
      t: (await f.ownTokenOf({ urn: OTHER_USER, headers: {} })).id,
    })),
  },
  {
    operation: "Mutation.revokeAccessTokens",
    use: "of another user",
    needs: "MANAGE_ACCESS_TOKENS",
    call: gql(`mutation($u: String!) { revokeAccessTokens(actorUrn: $u) }`, () => ({ u: OTHER_USER })),
  },
  {
    operation: "Mutation.revokeAccessTokensOutsidePolicy",
    use: "of every user",
    needs: "MANAGE_ACCESS_TOKENS",
    call: gql(`mutation { revokeAccessTokensOutsidePolicy }`, () => ({})),
  },
  {
    // A token rotating itself needs no privilege (token-rotation.int.spec.ts); another of yours needs what minting does.
    // The token rotated is one the caller minted with its own credential (so within its scopes and chain), or, when it
    // may not mint, one minted for it.
    operation: "Mutation.rotateAccessToken",
    use: "another token of yours",
    needs: "GENERATE_PERSONAL_ACCESS_TOKENS",
    call: gql(`mutation($t: String!) { rotateAccessToken(tokenId: $t) { metadata { id } } }`, async (c, f) => ({
      // The fallback is scoped as the caller's credential is: a child's own mint can fail on its lifetime alone (an
      // hour from a credential with less than an hour left, in whole seconds), which must not decide the outcome.
      t: (
        await createToken(f.harness, c.urn, c.headers, { duration: "ONE_HOUR" }).catch(async () =>
          createToken(f.harness, c.urn, systemClientHeaders(ROOT), { scopes: await credentialScopes(f.harness, c) }),
        )
      ).id,
    })),
  },
  {
    operation: "Mutation.rotateAccessToken",
    use: "another user's",
    needs: "MANAGE_ACCESS_TOKENS",
    call: gql(`mutation($t: String!) { rotateAccessToken(tokenId: $t) { metadata { id } } }`, async (_c, f) => ({
      t: (await f.ownTokenOf({ urn: OTHER_USER, headers: {} })).id,
    })),
  },
  {
    operation: "Mutation.revokeActorAccess",
    use: "of another user",
    needs: "MANAGE_ACCESS_TOKENS",
    call: gql(`mutation($u: String!) { revokeActorAccess(input: {actorUrn: $u}) { revokedTokenIds } }`, () => ({
      u: OTHER_USER,
    })),
  },
  {
    operation: "Query.delegatedWork",
    use: "of another user",
    needs: "MANAGE_ACCESS_TOKENS",
    call: gql(`query($u: String!) { delegatedWork(input: {ownerUrn: $u}) { urn } }`, () => ({ u: OTHER_USER })),
  },
  // Service accounts
  {
    operation: "Mutation.createAccessToken",
    use: "for a service account",
    needs: "MANAGE_SERVICE_ACCOUNTS",
    call: gql(CREATE, (_c, f) => ({ i: { ...tokenInput(f.serviceAccount), type: "SERVICE_ACCOUNT" } })),
  },
  {
    operation: "Mutation.createServiceAccount",
    needs: "MANAGE_SERVICE_ACCOUNTS",
    call: gql(`mutation { createServiceAccount(input: {displayName: "matrix"}) { urn } }`),
  },
  {
    operation: "Query.listServiceAccounts",
    needs: "MANAGE_SERVICE_ACCOUNTS",
    call: gql(`{ listServiceAccounts(input: {}) { total } }`),
  },
  {
    operation: "Query.getServiceAccount",
    needs: "MANAGE_SERVICE_ACCOUNTS",
    call: gql(`query($u: String!) { getServiceAccount(urn: $u) { urn } }`, (_c, f) => ({ u: f.serviceAccount })),
  },
  {
    operation: "Mutation.deleteServiceAccount",
    needs: "MANAGE_SERVICE_ACCOUNTS",
    call: gql(`mutation($u: String!) { deleteServiceAccount(urn: $u) }`, async (_c, f) => ({
      u: await f.freshServiceAccount(),
    })),
  },
  // Policies, groups, audit
  { operation: "Query.listPolicies", needs: "MANAGE_POLICIES", call: gql(`{ listPolicies(input: {}) { total } }`) },
  {
    operation: "Query.policy",
    needs: "MANAGE_POLICIES",
    call: gql(`query($u: String!) { policy(urn: $u) { urn } }`, (_c, f) => ({ u: f.policy })),
  },
  {
    operation: "Mutation.createPolicy",
    needs: "MANAGE_POLICIES",
    call: gql(`mutation($i: PolicyUpdateInput!) { createPolicy(input: $i) }`, () => ({
      i: { name: "p", state: "INACTIVE", privileges: ["VIEW_TESTS"], actors: { users: [POLICY_USER] } },
    })),
  },
  {
    operation: "Mutation.updatePolicy",
    needs: "MANAGE_POLICIES",
    call: gql(`mutation($u: String!, $i: PolicyUpdateInput!) { updatePolicy(urn: $u, input: $i) }`, (_c, f) => ({
      u: f.policy,
      i: { name: "p", state: "INACTIVE", privileges: ["VIEW_TESTS"], actors: { users: [POLICY_USER] } },
    })),
  },
  {
    operation: "Mutation.deletePolicy",
    needs: "MANAGE_POLICIES",
    call: gql(`mutation($u: String!) { deletePolicy(urn: $u) }`, async (_c, f) => ({ u: await f.freshPolicy() })),
  },
  { operation: "Query.listGroups", needs: "MANAGE_POLICIES", call: gql(`{ listGroups(input: {}) { total } }`) },
  // DataHub's web app: the shell's configuration and roles (none held) to anyone; who holds tokens to a token manager.
  { operation: "Query.appConfig", needs: null, call: gql(`{ appConfig { authConfig { tokenAuthEnabled } } }`) },
  { operation: "Query.listRoles", needs: null, call: gql(`{ listRoles(input: {}) { total } }`) },
  {
    operation: "Query.listUsers",
    needs: "MANAGE_ACCESS_TOKENS",
    call: gql(`{ listUsers(input: {}) { total users { urn } } }`),
  },
  {
    operation: "Mutation.createGroup",
    needs: "MANAGE_POLICIES",
    call: gql(`mutation { createGroup(input: {name: "g"}) }`),
  },
  {
    operation: "Mutation.addGroupMembers",
    needs: "MANAGE_POLICIES",
    call: gql(
      `mutation($g: String!, $u: [String!]!) { addGroupMembers(input: {groupUrn: $g, userUrns: $u}) }`,
      (_c, f) => ({ g: f.group, u: [POLICY_USER] }),
    ),
  },
  {
    operation: "Mutation.removeGroupMembers",
    needs: "MANAGE_POLICIES",
    call: gql(
      `mutation($g: String!, $u: [String!]!) { removeGroupMembers(input: {groupUrn: $g, userUrns: $u}) }`,
      (_c, f) => ({ g: f.group, u: [POLICY_USER] }),
    ),
  },
  {
    operation: "Query.listAuditEvents",
    needs: "MANAGE_POLICIES",
    call: gql(`{ listAuditEvents(input: {}) { total } }`),
  },
];
