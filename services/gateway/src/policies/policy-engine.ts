import { LRUCache } from "lru-cache";
import { grantsFrom, loadGroupsOf, loadPlatformPolicies, type Policy, type PrismaClient } from "@mdp/db";
import { effectivePrivileges, forbidden, type GrantsOf, type Principal } from "@mdp/core";
import type { InvalidationBus } from "../events/invalidation-bus";
import { withImplied, type Privilege } from "./privileges";

// The root user's built-in policy is @mdp/db's, beside the reads every process shares (loadGrants).
export { ROOT_POLICY_URN, rootPolicy } from "@mdp/db";

/**
 * A safety net only: pub/sub invalidation is what makes changes visible within a second (while the bus is live). The
 * policies and everything derived from them are one snapshot, dropped together at this age.
 */
const MAX_CACHE_AGE_MS = 60_000;
/** Users whose groups and grants a replica keeps at most: a burst of distinct users evicts the least recent. */
const MAX_CACHED_USERS = 10_000;

/**
 * Decides which privileges an actor holds: the union of every ACTIVE policy that names the user, one of the user's
 * groups, or all users (@mdp/db's grantsFrom, the one computation the workers' loadGrants also uses). Policies and group memberships are cached per replica and dropped whenever any replica
 * publishes "policies-changed" (or this one reconnects to Redis).
 */
export class PolicyEngine {
  private activePolicies: Promise<Policy[]> | null = null;
  private readonly groupsOfUser = new LRUCache<string, Promise<string[]>>({ max: MAX_CACHED_USERS });
  /** derived from the two caches above, and dropped with them */
  private readonly privilegesOfUser = new LRUCache<string, Promise<ReadonlySet<Privilege>>>({ max: MAX_CACHED_USERS });
  private loadedAt = 0;
  /** grantsOf as a function, for effectivePrivileges (which asks it for every user of a token's chain) */
  private readonly grants: GrantsOf = (userUrn) => this.grantsOf(userUrn);

  constructor(
    private readonly prisma: PrismaClient,
    private readonly rootUserUrn: string,
    private readonly bus: InvalidationBus,
  ) {
    bus.onInvalidation((event) => {
      if (event.kind === "policies-changed") this.clear();
    });
    bus.onReset(() => this.clear());
  }

  /**
   * What the user's policies grant, whatever credential it uses; the set is shared between callers (and cached until
   * the next invalidation): read only. A request's own privileges are privilegesOf(actor)'s.
   */
  grantsOf(userUrn: string): Promise<ReadonlySet<Privilege>> {
    // A change announced on a channel that is not delivering would go unseen: read PostgreSQL instead.
    if (!this.bus.isLive()) return this.computePrivileges(userUrn, false);
    if (Date.now() - this.loadedAt > MAX_CACHE_AGE_MS) this.clear();
    const cached = this.privilegesOfUser.get(userUrn);
    if (cached) return cached;
    const privileges = this.computePrivileges(userUrn);
    // never cache a failure (nor drop what a later call cached meanwhile)
    privileges.catch(() => this.privilegesOfUser.peek(userUrn) === privileges && this.privilegesOfUser.delete(userUrn));
    this.privilegesOfUser.set(userUrn, privileges);
    return privileges;
  }

  /**
   * The privileges this request may use (@mdp/core's effectivePrivileges over the cached grants): its user's grants,
   * and for an access token only those its scopes, its minter and the token it was minted with (each as they are
   * now) also allow. Every check reads this (has, require, and the few places that need the whole set), so a link of
   * the chain limits them all, and a privilege any of those users loses leaves the token at once. Read only.
   */
  privilegesOf(actor: Principal): Promise<ReadonlySet<Privilege>> {
    return effectivePrivileges(actor, this.grants);
  }

  private async computePrivileges(userUrn: string, cached = true): Promise<ReadonlySet<Privilege>> {
    const [policies, groups] = await Promise.all(
      cached ? [this.policies(), this.groups(userUrn)] : [this.loadPolicies(), this.loadGroups(userUrn)],
    );
    return grantsFrom(policies, groups, userUrn);
  }

  async has(actor: Principal, privilege: Privilege): Promise<boolean> {
    return (await this.privilegesOf(actor)).has(privilege);
  }

  /**
   * Throws FORBIDDEN "<actor> is unauthorized to <operation>." unless the request may use the privilege; when the user
   * holds it and a link of its token's chain leaves it out, the message says which (it tells the caller only of its
   * own token: the token's minter is shown in its metadata already).
   */
  async require(actor: Principal, privilege: Privilege, operation: string): Promise<void> {
    if ((await this.privilegesOf(actor)).has(privilege)) return;
    const link = await this.linkLeavingOut(actor, privilege);
    throw forbidden(`${actor.urn} is unauthorized to ${operation}${link === undefined ? "" : `: ${link}`}.`);
  }

  /** Which link of a token's chain leaves out a privilege its user holds, in the order effectivePrivileges reads them. */
  private async linkLeavingOut(actor: Principal, privilege: Privilege): Promise<string | undefined> {
    if (!(await this.grantsOf(actor.urn)).has(privilege)) return undefined;
    if (actor.scopes !== undefined && !withImplied(actor.scopes).has(privilege)) {
      return `the access token's scopes leave out ${privilege}`;
    }
    const { minterUrn } = actor;
    if (minterUrn !== undefined && minterUrn !== actor.urn && !(await this.grantsOf(minterUrn)).has(privilege)) {
      return `the access token was created by ${minterUrn}, who does not hold ${privilege}`;
    }
    if (actor.parent !== undefined) return `the access token it was created with does not hold ${privilege}`;
    return undefined;
  }

  private policies(): Promise<Policy[]> {
    if (!this.activePolicies) {
      this.loadedAt = Date.now();
      const loading = this.loadPolicies();
      loading.catch(() => this.clear()); // never cache a failure
      this.activePolicies = loading;
    }
    return this.activePolicies;
  }

  private groups(userUrn: string): Promise<string[]> {
    const cached = this.groupsOfUser.get(userUrn);
    if (cached) return cached;
    const groups = this.loadGroups(userUrn);
    groups.catch(() => this.groupsOfUser.peek(userUrn) === groups && this.groupsOfUser.delete(userUrn));
    this.groupsOfUser.set(userUrn, groups);
    return groups;
  }

  private loadPolicies(): Promise<Policy[]> {
    return loadPlatformPolicies(this.prisma, this.rootUserUrn);
  }

  private loadGroups(userUrn: string): Promise<string[]> {
    return loadGroupsOf(this.prisma, userUrn);
  }

  private clear(): void {
    this.activePolicies = null;
    this.groupsOfUser.clear();
    this.privilegesOfUser.clear();
  }
}
