/** What the incident response tests share (incident-response-*.int.spec.ts): users, documents and the work they read. */

export const IDLE_DAYS = 30;
/** What setting each kind of deferred work needs. */
export const WORKER_PRIVILEGES = ["MANAGE_TESTS", "MANAGE_SYSTEM_OPERATIONS", "GENERATE_PERSONAL_ACCESS_TOKENS"];

export const CREATE_TEST = `mutation($i: CreateTestInput!) { createTest(input: $i) }`;
export const TEST = `query($u: String!) { test(urn: $u) { ownerUrn suspendedAt suspendedReason } }`;
export const CREATE_POLICY = `mutation($i: CreateRetentionPolicyInput!) { createRetentionPolicy(input: $i) { urn } }`;
export const POLICY = `query($u: String!) { retentionPolicy(urn: $u) { ownerUrn suspendedAt suspendedReason } }`;
export const CREATE_HOOK = `mutation($i: CreateWebhookSubscriptionInput!) { createWebhookSubscription(input: $i) { subscription { id } } }`;
export const HOOKS = `query($o: String!) { listWebhookSubscriptions(input: {ownerUrn: $o}) { subscriptions { id active disabledReason } } }`;
export const REVOKE = `mutation($t: String!) { revokeAccessToken(tokenId: $t) }`;
export const REVOKE_ALL = `mutation($u: String!) { revokeAccessTokens(actorUrn: $u) }`;
export const REVOKE_ACTOR = `mutation($u: String!) {
  revokeActorAccess(input: {actorUrn: $u, reason: "incident"}) { revokedTokenIds suspendedWork { kind urn ownerUrn } }
}`;
export const ROTATE = `mutation($t: String!) { rotateAccessToken(tokenId: $t) { accessToken metadata { id } } }`;
export const ME = `{ me { urn } }`;

/** What one token set: a scheduled test, an on-change test, a retention policy and a webhook subscription. */
export interface Work {
  owner: string;
  scheduled: string;
  onChange: string;
  policy: string;
  webhook: string;
}

/** How a piece of work stands, as its owner and an admin read it. */
export interface Standing {
  suspendedAt: number | null;
  suspendedReason: string | null;
}
