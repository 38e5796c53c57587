/**
 * The seventh principal of the authorization matrix (authorization-acts-on-others.int.spec.ts): a caller acting on an
 * object another user (OWNER) owns; the context each of its rows runs in, and what its rows check.
 */
import type { Privilege } from "@mdp/core";
import { bearer, type Harness } from "../gateway-harness";
import type { Caller, Outcome } from "./principals";

/** Who owns the objects the seventh principal acts on: it holds everything their work could use. */
export const OWNER = "urn:li:corpuser:matrix-owner";
export const OWNER_HOLDS: Privilege[] = [
  "GENERATE_PERSONAL_ACCESS_TOKENS",
  "MANAGE_TESTS",
  "EDIT_ENTITY_TAGS",
  "EDIT_ENTITY_OWNERS",
  "MANAGE_SYSTEM_OPERATIONS",
  "MANAGE_SERVICE_ACCOUNTS",
];
export const TAG = "urn:li:tag:matrix-owner-action";
/** A test that passes on a described dataset, and then tags it: what its owner may write, and the caller may not. */
export const TAGGING = JSON.stringify({
  on: { types: ["dataset"] },
  rules: { property: "datasetProperties.description", operator: "exists" },
  actions: { passing: [{ type: "ADD_TAGS", values: [TAG] }] },
});

export interface Token {
  id: string;
  token: string;
}
/** One call of the seventh principal: its caller holds `holds` only, through its own one-day token. */
export interface OthersContext {
  h: Harness;
  caller: Caller & { token: Token };
  owner: Caller;
  ownerToken: Token;
  /** a GraphQL call; the outcome, the error's message, the data */
  gql(
    query: string,
    variables: Record<string, unknown>,
    headers: Record<string, string>,
  ): Promise<{ outcome: Outcome | "BAD_REQUEST"; detail: string; data: Record<string, unknown> | null | undefined }>;
  /** a test of OWNER's (no evaluation on change unless asked), set through its token (or `headers`): its urn */
  ownersTest(input?: Record<string, unknown>, headers?: Record<string, string>): Promise<string>;
  /** a new described dataset (no tags) */
  freshEntity(): Promise<string>;
  /** the tags written on an entity */
  tagsOf(urn: string): Promise<string[]>;
}
export interface OthersRow {
  /** as in ROWS */
  operation: string;
  use: string;
  /** the caller's only privileges */
  holds: Privilege[];
  run(c: OthersContext): Promise<void>;
}

export const ROTATE = `mutation($t: String!) { rotateAccessToken(tokenId: $t) { metadata { id } } }`;
export const UPDATE_TEST = `mutation($u: String!, $i: UpdateTestInput!) { updateTest(urn: $u, input: $i) }`;
export const testOf = (h: Harness, urn: string) => h.prisma.metadataTest.findUniqueOrThrow({ where: { urn } });

/** What the caller's successor token looks like: minted by it, under its token, expiring no later. */
export async function expectBoundedByCaller(c: OthersContext, tokenId: string): Promise<void> {
  const [minted, callers] = await Promise.all([
    c.h.prisma.accessToken.findUniqueOrThrow({ where: { id: tokenId } }),
    c.h.prisma.accessToken.findUniqueOrThrow({ where: { id: c.caller.token.id } }),
  ]);
  expect({ minter: minted.ownerUrn, parent: minted.parentTokenId }).toEqual({
    minter: c.caller.urn,
    parent: c.caller.token.id,
  });
  expect(minted.expiresAt!.getTime()).toBeLessThanOrEqual(callers.expiresAt!.getTime());
}

/** A push of OWNER's tagging test by the caller: the results pushed, the tag (the owner's authority) not written. */
export async function expectPushWithoutOwnersAuthority(c: OthersContext, entity: string, test: string): Promise<void> {
  const results = await c.h.prisma.aspect.findFirst({
    where: { urn: entity, aspectName: "testResults" },
    orderBy: { version: "desc" },
  });
  expect(JSON.stringify(results?.value ?? null)).toContain(test);
  expect(await c.tagsOf(entity)).toEqual([]);
}

/** A retention policy of OWNER's, set through its token. */
export async function ownersRetentionPolicy(c: OthersContext): Promise<string> {
  const res = await c.gql(
    `mutation { createRetentionPolicy(input: {entityType: "dataset", aspect: "datasetProfile", retainDays: 9, cron: "0 0 1 1 *"}) { urn } }`,
    {},
    bearer(c.ownerToken.token),
  );
  if (!res.data?.createRetentionPolicy) throw new Error(res.detail);
  return (res.data.createRetentionPolicy as { urn: string }).urn;
}
