import { withImplied, type Privilege } from "./privileges";

/**
 * The one model of delegated authority (docs/authorization.md): whatever acts — a request, a token, a schedule's
 * firing, a test's actions — acts for one principal, and may use only what that principal, and everyone it acts
 * through, holds *now*. Every privilege check of every process goes through `effectivePrivileges`.
 */
export interface Principal {
  /** the user it acts for */
  urn: string;
  /** the access token it came through, when it came through one */
  tokenId?: string;
  /** a scoped token's privileges: only these (with what they imply) of what the rest of the chain holds */
  scopes?: readonly Privilege[];
  /** who minted the token, when that is not `urn`: the token never holds what its minter no longer holds */
  minterUrn?: string;
  /** the token the minter authenticated with when it minted this one: its current effective privileges bound this one */
  parent?: Principal;
}

/**
 * The minter that bounds a token at every use (Principal.minterUrn): whoever minted it, when that is another user. A
 * service account's token (type SERVICE_ACCOUNT) too: its minter was handed its secret, so a grant made to the account
 * later reaches the token only within what the minter holds then (docs/authorization.md "Service accounts").
 */
export function boundingMinter(token: { actorUrn: string; ownerUrn: string }): string | undefined {
  return token.ownerUrn === token.actorUrn ? undefined : token.ownerUrn;
}

/** The system actor: DataHub's system client acts as it when a request names no actor (docs/authorization.md). */
export const SYSTEM_ACTOR_URN = "urn:li:corpuser:__datahub_system";

/** How long a token's chain of parents may be: each link is one more set to intersect at every use. */
export const MAX_TOKEN_CHAIN_DEPTH = 8;

/** A user's current grants (policies, groups, root): the gateway's cached read, a worker's fresh one. */
export type GrantsOf = (userUrn: string) => Promise<ReadonlySet<Privilege>>;

/**
 * What `principal` may use now: its user's grants ∩ its scopes ∩ its minter's grants (when another user minted it)
 * ∩ its parent token's effective privileges. The common case — a user's own unscoped token, the system client, a
 * schedule's owner — is its user's grants as `grantsOf` answers them (shared: read only), with no allocation.
 */
export async function effectivePrivileges(principal: Principal, grantsOf: GrantsOf): Promise<ReadonlySet<Privilege>> {
  const own = await grantsOf(principal.urn);
  const minter = principal.minterUrn !== undefined && principal.minterUrn !== principal.urn;
  if (principal.scopes === undefined && !minter && principal.parent === undefined) return own;
  const bounds: Array<ReadonlySet<Privilege>> = [];
  if (principal.scopes !== undefined) bounds.push(withImplied(principal.scopes));
  if (minter) bounds.push(await grantsOf(principal.minterUrn as string));
  if (principal.parent !== undefined) bounds.push(await effectivePrivileges(principal.parent, grantsOf));
  return new Set([...own].filter((p) => bounds.every((bound) => bound.has(p))));
}

/** What `principal` would lose of `wanted` against `holder`: the names `holder` lacks, for the refusal's message. */
export function missingFrom(holder: ReadonlySet<Privilege>, wanted: Iterable<Privilege>): Privilege[] {
  return [...wanted].filter((p) => !holder.has(p));
}
