/** What the token chain tests share (token-chains-*.int.spec.ts): their users and documents. */
import { eventually } from "@mdp/core/testing";
import { type GraphQLBody } from "./gateway-harness";

export const ME = `{ me { urn privileges } }`;
export const CREATE = `mutation($i: GetAccessTokenInput!) {
  createAccessToken(input: $i) { accessToken metadata { id actorUrn ownerUrn expiresAt scopes parentTokenId } }
}`;
export const CREATE_POLICY = `mutation($i: PolicyUpdateInput!) { createPolicy(input: $i) }`;
export const LIST_TESTS = `{ listTests(input: {}) { total } }`;

export interface Created {
  accessToken: string;
  metadata: {
    id: string;
    actorUrn: string;
    ownerUrn: string;
    expiresAt: number | null;
    scopes: string[] | null;
    parentTokenId: string | null;
  };
}

/** Polls until `check` holds; returns how long that took after `since` (throws past `limitMs`). */
export async function msUntil(since: number, check: () => Promise<boolean>, limitMs = 5_000): Promise<number> {
  await eventually("true", check, { timeoutMs: since + limitMs - Date.now() });
  return Date.now() - since;
}

/** The id (jti) a token's claims carry. */
export const idOf = (token: string): string =>
  (JSON.parse(Buffer.from(token.split(".")[1]!, "base64url").toString("utf8")) as { jti: string }).jti;

export const errorOf = (body: GraphQLBody) => ({
  code: body.errors?.[0]?.extensions?.code,
  message: body.errors?.[0]?.message,
});
