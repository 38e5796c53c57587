import { forbidden } from "@mdp/core";
import { privilegeOfAction, privilegesLacking, type TestActions } from "@mdp/metadata-tests";
import type { Actor } from "../auth/actor";
import type { PolicyEngine } from "../policies/policy-engine";

/**
 * Refuses (FORBIDDEN) a save that would have a test's actions write what `actor` may not: actions run for the test's
 * owner, who becomes the one saving them, so the caller must be able to use each action's privilege (EDIT_ENTITY_TAGS
 * for ADD_TAGS and REMOVE_TAGS, ...; INGEST_METADATA implies them all) in this very request, a scoped token's scopes
 * included. Read from the policy engine's cache, which policy changes drop: no database read. The message names each
 * missing privilege with the action types that need it. Pushes check the owner's grants again (evaluation worker).
 */
export async function requireActionPrivileges(
  engine: Pick<PolicyEngine, "privilegesOf" | "grantsOf">,
  actor: Actor,
  actions: TestActions | undefined,
  /** what is refused, as the message says it */
  what = "save these test actions",
): Promise<void> {
  if (!actions) return;
  const missing = privilegesLacking(actions, await engine.privilegesOf(actor));
  if (missing.length === 0) return;
  const all = [...actions.passing, ...actions.failing];
  const needs = missing.map((privilege) => {
    const types = new Set(all.filter((a) => privilegeOfAction(a.type) === privilege).map((a) => a.type));
    return `${privilege} (for ${[...types].join(", ")})`;
  });
  // As PolicyEngine.require: when the user holds them and only its token leaves them out, it is told so.
  const granted = await engine.grantsOf(actor.urn);
  const why = missing.every((p) => granted.has(p)) ? "which its access token leaves out" : "which it does not hold";
  throw forbidden(`${actor.urn} is unauthorized to ${what}: they need ${needs.join(", ")}, ${why}.`);
}
