import { PRIVILEGES, SYSTEM_ACTOR_URN, withImplied, type Privilege } from "@mdp/core";
import type { Policy, PrismaClient } from "../generated/prisma/client";

export const ROOT_POLICY_URN = "urn:li:dataHubPolicy:root-user";

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
