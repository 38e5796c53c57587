import { grantsFrom, loadGroupsOf, loadPlatformPolicies, type Policy, type PrismaClient } from "@mdp/db";
import { forbidden } from "@mdp/core";
import type { Actor } from "../auth/actor";
import type { InvalidationBus } from "../events/invalidation-bus";
import { withinScopes, type Privilege } from "./privileges";

// The root user's built-in policy is @mdp/db's, beside the reads every process shares (loadGrants).
export { ROOT_POLICY_URN, rootPolicy } from "@mdp/db";

/** A safety net only: pub/sub invalidation is what makes changes visible within a second (while the bus is live). */
const MAX_CACHE_AGE_MS = 60_000;

/**
 * Decides which privileges an actor holds: the union of every ACTIVE policy that names the user, one of the user's
 * groups, or all users (@mdp/db's grantsFrom, the one computation the workers' loadGrants also uses). Policies and group memberships are cached per replica and dropped whenever any replica
 * publishes "policies-changed" (or this one reconnects to Redis).
 */
export class PolicyEngine {
  private activePolicies: Promise<Policy[]> | null = null;
  private readonly groupsOfUser = new Map<string, Promise<string[]>>();
  /** derived from the two caches above, and dropped with them */
  private readonly privilegesOfUser = new Map<string, Promise<ReadonlySet<Privilege>>>();
  private loadedAt = 0;

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
    let privileges = this.privilegesOfUser.get(userUrn);
    if (!privileges) {
      privileges = this.computePrivileges(userUrn);
      privileges.catch(() => this.privilegesOfUser.delete(userUrn)); // never cache a failure
      if (this.privilegesOfUser.size >= 10_000) this.privilegesOfUser.clear();
      this.privilegesOfUser.set(userUrn, privileges);
    }
    return privileges;
  }

  /**
   * The privileges this request may use: its user's grants, narrowed to a scoped token's scopes. Every check reads
   * this (has, require, and the few places that need the whole set), so a scope limits them all, and a privilege the
   * user loses leaves its scoped tokens too. Read only.
   */
  async privilegesOf(actor: Actor): Promise<ReadonlySet<Privilege>> {
    return withinScopes(await this.grantsOf(actor.urn), actor.scopes);
  }

  private async computePrivileges(userUrn: string, cached = true): Promise<ReadonlySet<Privilege>> {
    const [policies, groups] = await Promise.all(
      cached ? [this.policies(), this.groups(userUrn)] : [this.loadPolicies(), this.loadGroups(userUrn)],
    );
    return grantsFrom(policies, groups, userUrn);
  }

  async has(actor: Actor, privilege: Privilege): Promise<boolean> {
    return (await this.privilegesOf(actor)).has(privilege);
  }

  /**
   * Throws FORBIDDEN "<actor> is unauthorized to <operation>." unless the request may use the privilege; when the user
   * holds it and only the token's scopes leave it out, the message says so (it tells the caller only of its own).
   */
  async require(actor: Actor, privilege: Privilege, operation: string): Promise<void> {
    const held = await this.grantsOf(actor.urn);
    if (withinScopes(held, actor.scopes).has(privilege)) return;
    if (held.has(privilege)) {
      throw forbidden(
        `${actor.urn} is unauthorized to ${operation}: the access token's scopes leave out ${privilege}.`,
      );
    }
    throw forbidden(`${actor.urn} is unauthorized to ${operation}.`);
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
    let groups = this.groupsOfUser.get(userUrn);
    if (!groups) {
      groups = this.loadGroups(userUrn);
      groups.catch(() => this.groupsOfUser.delete(userUrn));
      // Bounded: a burst of distinct users cannot grow the map without limit.
      if (this.groupsOfUser.size >= 10_000) this.groupsOfUser.clear();
      this.groupsOfUser.set(userUrn, groups);
    }
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
