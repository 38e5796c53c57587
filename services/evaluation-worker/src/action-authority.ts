import type { Privilege } from "@mdp/core";
import { ownerKey, type OwnerPrivileges, type WorkOwner } from "@mdp/db";
import { privilegesLacking, type NotApplied, type TestActions } from "@mdp/metadata-tests";

/**
 * Who asks for a push: the principal of the request or task (a PushItem's actorUrn and actorTokenId; null: no token,
 * the system client, or a schedule's firing and evaluation on change, which act for the test's owner).
 */
export interface PushCaller {
  urn: string;
  tokenId: string | null;
}

/** A test's actions as a push weighs them: for whom they act, whether the test is ACTIVE, and what they are. */
export interface ActionsToWeigh {
  owner: WorkOwner;
  /** false: an INACTIVE test, whose actions run only for its owner */
  active: boolean;
  actions: TestActions;
}

/**
 * What a push by one caller leaves out of one test's actions (absent: nothing): all of them, and why (`notApplied`),
 * or those needing a privilege it may not use (`missing`).
 */
export interface Withheld {
  notApplied?: NotApplied;
  missing?: ReadonlySet<Privilege>;
}

/**
 * Decides which of a test's actions a push may run (docs/authorization.md "Test actions"). A push acts with its
 * caller's authority, never borrowing the owner's: an action runs only when both the test's owner (through the token
 * it set the test with; nothing while the test is suspended) and the caller (through the token it called with: its
 * scopes, minter and parents, as ownerPrivilegesReader reads an owner) hold its privilege now. Otherwise pushing
 * someone else's test would be a way to write tags or owners with the owner's privileges. An INACTIVE test's actions
 * run only for its owner: a draft is not yet set to act for anyone.
 *
 * One instance per push: each principal's grants are read once (per urn, token and suspension), and only when a test
 * with actions needs them.
 */
export class ActionAuthority {
  private readonly grants = new Map<string, Promise<ReadonlySet<Privilege>>>();

  constructor(private readonly read: OwnerPrivileges) {}

  async withheld(test: ActionsToWeigh, caller: PushCaller): Promise<Withheld | undefined> {
    const ownCall = caller.urn === test.owner.urn;
    if (!test.active && !ownCall) return { notApplied: "INACTIVE" };
    const owners = await this.grantsOf(test.owner);
    // The owner's own push, through the token it set the test with or through none (a schedule, evaluation on change,
    // the system client naming it): what that token allows is already within what the owner holds, so the owner's
    // read is the whole answer.
    const sameAuthority = ownCall && (caller.tokenId === null || caller.tokenId === test.owner.tokenId);
    const callers = sameAuthority ? owners : await this.grantsOf({ ...caller, suspended: false });
    const both = callers === owners ? owners : new Set([...owners].filter((p) => callers.has(p)));
    const missing = privilegesLacking(test.actions, both);
    return missing.length > 0 ? { missing: new Set(missing) } : undefined;
  }

  private grantsOf(principal: WorkOwner): Promise<ReadonlySet<Privilege>> {
    const key = ownerKey(principal);
    let read = this.grants.get(key);
    if (!read) this.grants.set(key, (read = this.read(principal)));
    return read;
  }
}

/** One key per caller: what ActionAuthority.withheld answers the same for, given one test. */
export function callerKey(caller: PushCaller): string {
  return `${caller.urn}\n${caller.tokenId ?? ""}`;
}

/** The caller of a push item, a job item or a task: its actor and the token it used. */
export function callerOf(item: { actorUrn: string; actorTokenId?: string | null }): PushCaller {
  return { urn: item.actorUrn, tokenId: item.actorTokenId ?? null };
}
