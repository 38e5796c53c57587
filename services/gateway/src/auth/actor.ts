import type { Privilege } from "../policies/privileges";

/** Who is making a request, as established by authentication. */
export interface Actor {
  /** the user urn the request acts for */
  urn: string;
  /** how the caller proved it: an access token, the trusted system client, or (development only) the header alone */
  via: "token" | "system" | "header";
  /** the access token's id when via = "token" */
  tokenId?: string;
  /**
   * A scoped access token's privileges: the request may use only these (with what they imply) of what its actor holds
   * (PolicyEngine.privilegesOf). Undefined: unscoped, the actor's full set (every other way of authenticating too).
   */
  scopes?: readonly Privilege[];
}

/**
 * The owner columns of deferred work (a scheduled test, a retention policy) that `actor` sets: its user, and the token
 * it used, so the work is found and suspended with that token's user (delegatedWork, revokeActorAccess).
 */
export function ownedBy(actor: Actor): { ownerUrn: string; ownerTokenId: string | null } {
  return { ownerUrn: actor.urn, ownerTokenId: actor.tokenId ?? null };
}
