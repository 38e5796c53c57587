import { forbidden, SYSTEM_ACTOR_URN } from "@mdp/core";
import type { Actor } from "../auth/actor";

/**
 * The two principals the platform runs as — the root user and the system actor, which hold every privilege and own
 * the platform's own work — are not ended by a MANAGE_ACCESS_TOKENS holder (their tokens revoked, their work
 * suspended): that would turn incident response against the platform itself. Only the root user (acting as itself)
 * and the system client (acting as the system actor) may. `what` says what was refused ("revoke the access of").
 */
export function requireMayEndPlatformAccess(actor: Actor, userUrn: string, rootUserUrn: string, what: string): void {
  const platform = userUrn === rootUserUrn ? "the root user" : userUrn === SYSTEM_ACTOR_URN ? "the system actor" : null;
  if (platform === null || actor.urn === rootUserUrn || actor.urn === SYSTEM_ACTOR_URN) return;
  throw forbidden(
    `${actor.urn} is unauthorized to ${what} ${userUrn}, ${platform}: only the root user and the system client may.`,
  );
}
