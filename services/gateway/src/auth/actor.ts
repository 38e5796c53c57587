import type { Principal } from "@mdp/core";

/**
 * Who is making a request, as established by authentication: the principal it acts for (@mdp/core's one model of
 * delegated authority: its user, and for an access token the token's scopes, minter and parent token, which
 * PolicyEngine.privilegesOf intersects at every check), and how the caller proved it.
 */
export interface Actor extends Principal {
  /** how the caller proved it: an access token, the trusted system client, or (development only) the header alone */
  via: "token" | "system" | "header";
  /**
   * When via = "token" and the token expires: its expiry, epoch ms. A token minted with it may not outlive it (its
   * own parent's expiry bounded it when it was minted, so this bounds the whole chain).
   */
  tokenExpiresAt?: number;
  /**
   * When via = "token": the token is a SESSION, its user signed in through DataHub's frontend. A token the user creates
   * with it is the user's own act, bounded by the user's privileges but not by the session (token.service.ts).
   */
  session?: true;
}

/**
 * The owner columns of deferred work (a scheduled test, a retention policy) that `actor` sets: its user, and the token
 * it used, so the work is found and suspended with that token's user (delegatedWork, revokeActorAccess).
 */
export function ownedBy(actor: Actor): { ownerUrn: string; ownerTokenId: string | null } {
  return { ownerUrn: actor.urn, ownerTokenId: actor.tokenId ?? null };
}
