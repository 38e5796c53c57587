import type { Privilege } from "@mdp/core";
import type { TestActions } from "./definition.types";
import { aspectOfAction, type ActionAspect } from "./action-catalogue";
import type { ActionRun } from "./action-planner";

/**
 * The privilege writing each aspect takes: DataHub's resource privileges for editing it. A test's actions run for its
 * owner (docs/authorization.md), so the owner must hold the privilege of every aspect they write, when the test is
 * saved and again at each push (INGEST_METADATA implies them all).
 */
export const ACTION_ASPECT_PRIVILEGES: Readonly<Record<ActionAspect, Privilege>> = {
  globalTags: "EDIT_ENTITY_TAGS",
  glossaryTerms: "EDIT_ENTITY_GLOSSARY_TERMS",
  ownership: "EDIT_ENTITY_OWNERS",
  domains: "EDIT_ENTITY_DOMAINS",
  deprecation: "EDIT_ENTITY_DEPRECATION",
};

/** The privileges a test's actions need, each once. */
export function privilegesOfActions(actions: TestActions | undefined): Privilege[] {
  if (!actions) return [];
  const needed = new Set<Privilege>();
  for (const action of [...actions.passing, ...actions.failing]) {
    needed.add(privilegeOfAction(action.type));
  }
  return [...needed].sort();
}

/**
 * Of the privileges `actions` need, those `held` lacks: the actions' owner may not write what these guard (a test is
 * saved only by one who holds them all; a push re-checks its owner's current grants).
 */
export function privilegesLacking(actions: TestActions | undefined, held: ReadonlySet<Privilege>): Privilege[] {
  return privilegesOfActions(actions).filter((p) => !held.has(p));
}

/** The privilege an action needs: its aspect's. */
export function privilegeOfAction(type: string): Privilege {
  return ACTION_ASPECT_PRIVILEGES[aspectOfAction(type)];
}

/**
 * What a push may not use of a test's actions' privileges: what its owner lacks, or (a push by someone else) what
 * that caller or the owner lacks (unset or empty: nothing; every action runs).
 */
export type LackingOf = (test: string) => ReadonlySet<Privilege> | undefined;

/**
 * Why none of a test's actions run in a push, whatever privileges are held: `INACTIVE`, an INACTIVE test pushed by
 * someone other than its owner (its actions run only for its owner). Unset: they run as far as LackingOf allows.
 */
export type WithheldOf = (test: string) => NotApplied | undefined;
export type NotApplied = "INACTIVE";

/**
 * The runs as their tests' owners may have them: each keeps, in order, only the actions whose privilege its owner
 * holds; runs left with none are dropped.
 */
export function withoutRefused(runs: readonly ActionRun[], lacking: LackingOf): ActionRun[] {
  return runs.flatMap((run) => {
    const lacks = lacking(run.test);
    if (!lacks || lacks.size === 0) return [run];
    const kept = run.actions.filter((action) => !lacks.has(privilegeOfAction(action.type)));
    return kept.length > 0 ? [{ ...run, actions: kept }] : [];
  });
}
