import { randomUUID } from "node:crypto";
import { z } from "zod";
import { badInput, forbidden, makeUrn, notFound, type Config } from "@mdp/core";
import {
  deletePolicy,
  findPolicy,
  inPrismaTransaction,
  insertPolicy,
  notFoundWhenMissing,
  type Policy,
  type Prisma,
  type PrismaClient,
  replicaReads,
  type StaleReads,
  updatePolicy,
} from "@mdp/db";
import type { Actor } from "../auth/actor";
import { recordAudit } from "../audit/audit.service";
import type { InvalidationBus } from "../events/invalidation-bus";
import { pageInput } from "../shared/paging";
import { rule, textField, urnField } from "../shared/validate";
import { ROOT_POLICY_URN, rootPolicy } from "./policy-engine";
import { PRIVILEGES, canonicalPrivilege } from "./privileges";

/** A policy's fields (createPolicy, updatePolicy), stored as they parse: privileges in our spelling, lists deduplicated. */
const policyInput = z
  .object({
    type: z
      .enum(["PLATFORM", "METADATA"])
      .nullish()
      .transform((type) => type ?? "PLATFORM"),
    name: textField({ min: 1, max: 256, trim: true }),
    description: textField({ max: 2000 })
      .nullish()
      .transform((description) => description ?? null),
    state: z.enum(["ACTIVE", "INACTIVE"]),
    privileges: z.array(z.string()).refine(
      ...rule((at, names: string[]) => {
        const unknown = names.filter((p) => canonicalPrivilege(p) === undefined);
        if (unknown.length > 0) {
          throw badInput(`${at} has unknown privileges ${unknown.join(", ")}; known: ${PRIVILEGES.join(", ")}`);
        }
      }),
    ),
    actors: z.object({
      users: z.array(urnField("corpuser")).nullish(),
      groups: z.array(urnField("corpGroup")).nullish(),
      allUsers: z.boolean().nullish(),
    }),
  })
  .transform(({ actors, privileges, ...policy }) => ({
    ...policy,
    // Stored as ours: a DataHub spelling (GET_ENTITY_PRIVILEGE) reads back as the privilege it grants (GET_ENTITY).
    privileges: [...new Set(privileges.map((p) => canonicalPrivilege(p)!))],
    users: [...new Set(actors.users ?? [])],
    groups: [...new Set(actors.groups ?? [])],
    allUsers: actors.allUsers ?? false,
  }));
const policyUrn = urnField("dataHubPolicy");

export const createPolicyArgs = z.object({ input: policyInput });
export const updatePolicyArgs = z.object({ urn: policyUrn, input: policyInput });
export const policyArgs = z.object({ urn: policyUrn });
export const listPoliciesArgs = pageInput({ query: z.string().nullish() });

/**
 * Platform policies (DataHub's GraphQL names). Every operation needs MANAGE_POLICIES (declared with the arguments'
 * contracts in policies.graphql.ts); every change is audited and reaches every replica.
 */
export class PolicyService {
  constructor(
    private readonly prisma: PrismaClient,
    private readonly bus: InvalidationBus,
    private readonly config: Pick<Config, "ROOT_USER_URN" | "URN_NAMESPACE">,
    /** where the listing reads (Database.stale) */
    private readonly reads: StaleReads,
  ) {}

  async create(actor: Actor, { input: data }: z.output<typeof createPolicyArgs>): Promise<string> {
    const urn = makeUrn(this.config.URN_NAMESPACE, "dataHubPolicy", randomUUID());
    await inPrismaTransaction(this.prisma, async (tx) => {
      await insertPolicy(tx, { urn, ...data });
      await recordAudit(tx, actor, "policy.create", urn, { ...data });
    });
    await this.bus.publish({ kind: "policies-changed" });
    return urn;
  }

  async update(actor: Actor, { urn, input: data }: z.output<typeof updatePolicyArgs>): Promise<string> {
    await inPrismaTransaction(this.prisma, async (tx) => {
      await this.editable(tx, urn);
      await updatePolicy(tx, urn, data);
      await recordAudit(tx, actor, "policy.update", urn, { ...data });
    }).catch(notFoundWhenMissing(`Policy ${urn} does not exist`));
    await this.bus.publish({ kind: "policies-changed" });
    return urn;
  }

  async delete(actor: Actor, { urn }: z.output<typeof policyArgs>): Promise<string> {
    await inPrismaTransaction(this.prisma, async (tx) => {
      const policy = await this.editable(tx, urn);
      await deletePolicy(tx, urn);
      await recordAudit(tx, actor, "policy.delete", urn, { name: policy.name });
    }).catch(notFoundWhenMissing(`Policy ${urn} does not exist`));
    await this.bus.publish({ kind: "policies-changed" });
    return urn;
  }

  async get({ urn }: z.output<typeof policyArgs>): Promise<Policy | null> {
    if (urn === ROOT_POLICY_URN) return rootPolicy(this.config.ROOT_USER_URN);
    return findPolicy(this.prisma, urn);
  }

  async list({ input: { start, count, ...input } }: z.output<typeof listPoliciesArgs>) {
    const query = input.query?.trim();
    const root = rootPolicy(this.config.ROOT_USER_URN);
    const rootMatches = !query || root.name.toLowerCase().includes(query.toLowerCase());
    // The built-in policy is listed first; stored ones follow, oldest first.
    const offset = rootMatches ? 1 : 0;
    const { total: stored, rows } = await replicaReads.policyPage(
      this.reads,
      query || undefined,
      Math.max(0, start - offset),
      Math.max(0, count - (rootMatches && start === 0 ? 1 : 0)),
    );
    const policies = rootMatches && start === 0 && count > 0 ? [root, ...rows] : rows;
    return { start, count: policies.length, total: stored + offset, policies };
  }

  private async editable(tx: Prisma.TransactionClient, urn: string): Promise<Policy> {
    if (urn === ROOT_POLICY_URN) throw forbidden(`Policy ${urn} is built in and cannot be changed`);
    const policy = await findPolicy(tx, urn);
    if (!policy) throw notFound(`Policy ${urn} does not exist`);
    if (!policy.editable) throw forbidden(`Policy ${urn} is not editable`);
    return policy;
  }
}
