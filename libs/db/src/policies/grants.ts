import {
  boundingMinter,
  canonicalPrivilege,
  effectivePrivileges,
  MAX_TOKEN_CHAIN_DEPTH,
  PRIVILEGES,
  SYSTEM_ACTOR_URN,
  withImplied,
  type Principal,
  type Privilege,
} from "@mdp/core";
import type { Policy, PrismaClient } from "../generated/prisma/client";

export const ROOT_POLICY_URN = "urn:li:dataHubPolicy:root-user";

/** Service accounts' urns (the gateway's service-account-urn.ts): only such an owner can be a deleted account. */
const SERVICE_ACCOUNT_URN_PREFIX = "urn:li:corpuser:service_";

/** The root user's and the system actor's built-in policy: not stored, not editable, derived from ROOT_USER_URN. */
export function rootPolicy(rootUserUrn: string): Policy {
  const epoch = new Date(0);
  return {
    urn: ROOT_POLICY_URN,
    type: "PLATFORM",
    name: "Root user",
    description:
      "Built-in: the root user (ROOT_USER_URN) and the system actor (the system client naming no actor) hold every " +
      "platform privilege.",
    state: "ACTIVE",
    privileges: [...PRIVILEGES],
    users: [rootUserUrn, SYSTEM_ACTOR_URN],
    groups: [],
    allUsers: false,
    editable: false,
    createdAt: epoch,
    updatedAt: epoch,
  };
}

/** Every policy that grants platform privileges: the ACTIVE PLATFORM rows, and the root user's built-in one. */
export async function loadPlatformPolicies(
  prisma: Pick<PrismaClient, "policy">,
  rootUserUrn: string,
): Promise<Policy[]> {
  // As in DataHub, only platform policies grant platform privileges; METADATA policies speak of resources.
  const stored = await prisma.policy.findMany({ where: { state: "ACTIVE", type: "PLATFORM" } });
  return [rootPolicy(rootUserUrn), ...stored];
}

/** The groups a user is a member of. */
export async function loadGroupsOf(prisma: Pick<PrismaClient, "groupMember">, userUrn: string): Promise<string[]> {
  const rows = await prisma.groupMember.findMany({ where: { userUrn }, select: { groupUrn: true } });
  return rows.map((r) => r.groupUrn);
}

/**
 * What the policies grant the user: the union of every one (ACTIVE, PLATFORM: as loadPlatformPolicies gives them) that
 * names the user, one of its groups, or all users, with everything those privileges imply.
 */
export function grantsFrom(policies: readonly Policy[], groups: readonly string[], userUrn: string): Set<Privilege> {
  return withImplied(
    policies
      .filter((p) => p.allUsers || p.users.includes(userUrn) || p.groups.some((g) => groups.includes(g)))
      .flatMap((p) => p.privileges),
  );
}

/**
 * The user's privileges as PostgreSQL has them now, uncached: what the gateway's PolicyEngine computes (it caches the
 * two reads and drops them on invalidation), and what a worker reads each time a schedule acts for its owner (scheduled-work.ts).
 */
export async function loadGrants(
  prisma: Pick<PrismaClient, "policy" | "groupMember">,
  userUrn: string,
  rootUserUrn: string,
): Promise<Set<Privilege>> {
  const [policies, groups] = await Promise.all([
    loadPlatformPolicies(prisma, rootUserUrn),
    loadGroupsOf(prisma, userUrn),
  ]);
  return grantsFrom(policies, groups, userUrn);
}

/**
 * Who deferred work (a schedule's firings, a test's actions) acts for: its owner, the access token through which the
 * owner last set it (null: none, e.g. the system client), and whether it is suspended.
 */
export interface WorkOwner {
  urn: string;
  tokenId: string | null;
  suspended: boolean;
}

/** What deferred work may use now, for its owner (ownerPrivilegesReader). */
export type OwnerPrivileges = (owner: WorkOwner) => Promise<ReadonlySet<Privilege>>;

/**
 * Reads, afresh at each call, what deferred work may use (docs/authorization.md "Deferred work"): its owner's current
 * grants, bounded by the chain of the token the owner set it through — that token's scopes, its minter's current
 * grants, its parents' — as a request through that token would be (effectivePrivileges). Whether that token is still
 * live does not matter: revoking or outliving it does not stop the work it set (revokeActorAccess does), but the work
 * never does more than the token could. Suspended work may use nothing. A token row that is gone, or a chain past
 * MAX_TOKEN_CHAIN_DEPTH, leaves nothing either (fails closed); so does a deleted service account (its policies may
 * still name it, but nobody acts for it any more: work of it an admin turned on again does nothing).
 */
export function ownerPrivilegesReader(
  prisma: Pick<PrismaClient, "policy" | "groupMember" | "accessToken" | "serviceAccount">,
  rootUserUrn: string,
): OwnerPrivileges {
  return async (owner) => {
    if (owner.suspended) return new Set();
    if (owner.urn.startsWith(SERVICE_ACCOUNT_URN_PREFIX)) {
      const deleted = await prisma.serviceAccount.findFirst({
        where: { urn: owner.urn, deletedAt: { not: null } },
        select: { urn: true },
      });
      if (deleted) return new Set();
    }
    const grants = new Map<string, Promise<Set<Privilege>>>();
    const grantsOf = (urn: string) => {
      let read = grants.get(urn);
      if (!read) grants.set(urn, (read = loadGrants(prisma, urn, rootUserUrn)));
      return read;
    };
    if (owner.tokenId === null) return grantsOf(owner.urn);
    const principal = await tokenPrincipal(prisma, owner.tokenId, MAX_TOKEN_CHAIN_DEPTH);
    if (!principal || principal.urn !== owner.urn) return new Set();
    return effectivePrivileges(principal, grantsOf);
  };
}

/** A token's chain as a Principal, from its rows (null: a row is missing or the chain is too long). */
async function tokenPrincipal(
  prisma: Pick<PrismaClient, "accessToken">,
  tokenId: string,
  depthLeft: number,
): Promise<Principal | null> {
  if (depthLeft <= 0 || !UUID.test(tokenId)) return null;
  const row = await prisma.accessToken.findUnique({
    where: { id: tokenId },
    select: { type: true, actorUrn: true, ownerUrn: true, scopes: true, parentTokenId: true },
  });
  if (!row) return null;
  const parent =
    row.parentTokenId === null ? undefined : await tokenPrincipal(prisma, row.parentTokenId, depthLeft - 1);
  if (parent === null) return null;
  const scopes = row.scopes.map(canonicalPrivilege).filter((p): p is Privilege => p !== undefined);
  const minterUrn = boundingMinter(row);
  return {
    urn: row.actorUrn,
    tokenId,
    ...(row.scopes.length > 0 && { scopes }),
    ...(minterUrn !== undefined && { minterUrn }),
    ...(parent && { parent }),
  };
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** One key per owner, token and suspension: what ownerPrivilegesReader answers the same for. */
export function ownerKey(owner: WorkOwner): string {
  return `${owner.urn}\n${owner.tokenId ?? ""}\n${owner.suspended}`;
}
