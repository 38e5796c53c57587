/**
 * What the authorization matrix's rows are written in (authorization-every-operation.int.spec.ts): the callers, the
 * fixtures every row may use, a row's call through GraphQL or HTTP and its outcome, and the objects rows create.
 */
import type { Privilege } from "@mdp/core";
import { ROOT, systemClientHeaders, type Harness } from "../gateway-harness";

export const ENTITY = "urn:li:dataset:(urn:li:dataPlatform:hive,db.every_operation,PROD)";
export const DEFINITION = JSON.stringify({
  on: { types: ["dataset"] },
  rules: { property: "datasetProperties.description", operator: "exists" },
});
export const MINTER = "urn:li:corpuser:matrix-minter"; // MANAGE_ACCESS_TOKENS only
export const OTHER_USER = "urn:li:corpuser:matrix-other"; // holds nothing: any holder of MANAGE_ACCESS_TOKENS may mint for it
export const POLICY_USER = "urn:li:corpuser:matrix-policy-user"; // named by the policies the matrix changes

export type Outcome = "ok" | "UNAUTHENTICATED" | "FORBIDDEN" | "other";
/** What a route no privilege opens needs: the system client's credentials (DataHub's frontend signing users in). */
export const SYSTEM_CLIENT = "SYSTEM_CLIENT";
export interface Caller {
  urn: string;
  headers: Record<string, string>;
}
export interface Fixtures {
  test: string;
  freshTest(): Promise<string>;
  retentionPolicy: string;
  freshRetentionPolicy(): Promise<string>;
  policy: string;
  freshPolicy(): Promise<string>;
  group: string;
  serviceAccount: string;
  freshServiceAccount(): Promise<string>;
  truncationTask: string;
  ownTokenOf(caller: Caller): Promise<{ id: string; token: string }>;
  harness: Harness;
}
export interface Row {
  /** `Query.<field>`, `Mutation.<field>`, or `<METHOD> <path>[?action=<name>]` */
  operation: string;
  /** which use of the operation, when it has several (for yourself, for another user) */
  use?: string;
  /** the privilege this use needs; null: any authenticated caller; SYSTEM_CLIENT: no user, only the system client */
  needs: Privilege | null | typeof SYSTEM_CLIENT;
  call(h: Harness, caller: Caller, f: Fixtures): Promise<{ outcome: Outcome; detail: string }>;
}

export function gql(
  query: string,
  variables: (caller: Caller, f: Fixtures) => Record<string, unknown> | Promise<Record<string, unknown>> = () => ({}),
) {
  return async (h: Harness, caller: Caller, f: Fixtures) => {
    const res = await h.graphql(query, await variables(caller, f), caller.headers);
    const error = res.body.errors?.[0];
    const code = error?.extensions?.code;
    const outcome: Outcome = !error ? "ok" : code === "FORBIDDEN" || code === "UNAUTHENTICATED" ? code : "other";
    return { outcome, detail: error ? `${code}: ${error.message}` : "ok" };
  };
}

export function http(
  method: "GET" | "POST",
  path: (f: Fixtures) => string,
  body: (f: Fixtures) => unknown = () => ({}),
) {
  return async (h: Harness, caller: Caller, f: Fixtures) => {
    const res = await fetch(`${h.baseUrl}${path(f)}`, {
      method,
      headers: { "content-type": "application/json", ...caller.headers },
      ...(method === "POST" && { body: JSON.stringify(body(f)) }),
    });
    const text = await res.text();
    const outcome: Outcome = res.status === 401 ? "UNAUTHENTICATED" : res.status === 403 ? "FORBIDDEN" : "ok";
    return { outcome, detail: `${res.status} ${text.slice(0, 300)}` };
  };
}

export const WEBHOOK_INPUT = { url: "https://hooks.example/matrix", eventTypes: ["MetadataChangeLog_v1"] };
/**
 * A new webhook subscription of the caller `headers` authenticate (its id). Subscription writes are budgeted per actor
 * (30 at once, then 30 a minute), so rows that need "another user's" subscription make it for a user of their own.
 */
let otherSubscriptionOwners = 0;
export const anotherUser = () => systemClientHeaders(`urn:li:corpuser:matrix-subscriber-${++otherSubscriptionOwners}`);
export async function subscriptionOf(h: Harness, headers: Record<string, string>): Promise<string> {
  const res = await h.graphql(
    `mutation($i: CreateWebhookSubscriptionInput!) { createWebhookSubscription(input: $i) { subscription { id } } }`,
    { i: WEBHOOK_INPUT },
    headers,
  );
  const created = res.body.data?.createWebhookSubscription as { subscription: { id: string } } | undefined;
  if (!created) throw new Error(JSON.stringify(res.body.errors));
  return created.subscription.id;
}

export const testInput = (schedule?: string) => ({
  name: "matrix",
  category: "c",
  definition: { json: DEFINITION },
  ...(schedule && { schedule: { cron: schedule } }),
});
export const tokenInput = (actorUrn: string) => ({ type: "PERSONAL", actorUrn, duration: "ONE_HOUR", name: "matrix" });
export const CREATE = `mutation($i: GetAccessTokenInput!) { createAccessToken(input: $i) { metadata { id } } }`;

/** The scopes of the token a caller authenticates with (undefined: unscoped, or not a token). */
export async function credentialScopes(h: Harness, caller: Caller): Promise<string[] | undefined> {
  const raw = /^bearer (.+)$/i.exec(caller.headers.authorization ?? "")?.[1];
  if (!raw) return undefined;
  const res = await h.graphql(
    `query($t: String!) { getAccessTokenMetadata(token: $t) { scopes } }`,
    { t: raw },
    systemClientHeaders(ROOT),
  );
  const scopes = (res.body.data?.getAccessTokenMetadata as { scopes: string[] | null } | undefined)?.scopes;
  return scopes ?? undefined;
}
