import { randomUUID } from "node:crypto";
import { badInput, forbidden, makeUrn, notFound, parseUrnField, requireLength, type Config } from "@mdp/core";
import {
  deletePolicy,
  findPolicy,
  inPrismaTransaction,
  insertPolicy,
  notFoundWhenMissing,
  policyPage,
  updatePolicy,
  type Policy,
  type PolicyState,
  type PolicyType,
  type Prisma,
  type PrismaClient,
} from "@mdp/db";
import type { Actor } from "../auth/actor";
import { recordAudit } from "../audit/audit.service";
import type { InvalidationBus } from "../events/invalidation-bus";
import { pageOf } from "../graphql/paging";
import { ROOT_POLICY_URN, rootPolicy, type PolicyEngine } from "./policy-engine";
import { PRIVILEGES, canonicalPrivilege } from "./privileges";

export interface PolicyUpdateInput {
  type?: PolicyType | null;
  name: string;
  description?: string | null;
  state: PolicyState;
  privileges: string[];
  actors: { users?: string[] | null; groups?: string[] | null; allUsers?: boolean | null };
}

/** Platform policies (DataHub's GraphQL names). Every change needs MANAGE_POLICIES, is audited and reaches every replica. */
export class PolicyService {
  constructor(
    private readonly prisma: PrismaClient,
    private readonly engine: PolicyEngine,
    private readonly bus: InvalidationBus,
    private readonly config: Pick<Config, "ROOT_USER_URN" | "URN_NAMESPACE">,
  ) {}

  async create(actor: Actor, input: PolicyUpdateInput): Promise<string> {
    await this.engine.require(actor, "MANAGE_POLICIES", "create policies");
    const data = validate(input);
    const urn = makeUrn(this.config.URN_NAMESPACE, "dataHubPolicy", randomUUID());
    await inPrismaTransaction(this.prisma, async (tx) => {
      await insertPolicy(tx, { urn, ...data });
      await recordAudit(tx, actor, "policy.create", urn, { ...data });
    });
    await this.bus.publish({ kind: "policies-changed" });
    return urn;
  }

  async update(actor: Actor, urn: string, input: PolicyUpdateInput): Promise<string> {
    await this.engine.require(actor, "MANAGE_POLICIES", "update policies");
    parseUrnField("urn", urn, "dataHubPolicy");
    const data = validate(input);
    await inPrismaTransaction(this.prisma, async (tx) => {
      await this.editable(tx, urn);
      await updatePolicy(tx, urn, data);
      await recordAudit(tx, actor, "policy.update", urn, { ...data });
    }).catch(notFoundWhenMissing(`Policy ${urn} does not exist`));
    await this.bus.publish({ kind: "policies-changed" });
    return urn;
  }

  async delete(actor: Actor, urn: string): Promise<string> {
    await this.engine.require(actor, "MANAGE_POLICIES", "delete policies");
    parseUrnField("urn", urn, "dataHubPolicy");
    await inPrismaTransaction(this.prisma, async (tx) => {
      const policy = await this.editable(tx, urn);
      await deletePolicy(tx, urn);
      await recordAudit(tx, actor, "policy.delete", urn, { name: policy.name });
    }).catch(notFoundWhenMissing(`Policy ${urn} does not exist`));
    await this.bus.publish({ kind: "policies-changed" });
    return urn;
  }

  async get(actor: Actor, urn: string): Promise<Policy | null> {
    await this.engine.require(actor, "MANAGE_POLICIES", "view policies");
    parseUrnField("urn", urn, "dataHubPolicy");
    if (urn === ROOT_POLICY_URN) return rootPolicy(this.config.ROOT_USER_URN);
    return findPolicy(this.prisma, urn);
  }

  async list(actor: Actor, input: { start?: number | null; count?: number | null; query?: string | null }) {
    await this.engine.require(actor, "MANAGE_POLICIES", "list policies");
    const { start, count } = pageOf(input);
    const query = input.query?.trim();
    const root = rootPolicy(this.config.ROOT_USER_URN);
    const rootMatches = !query || root.name.toLowerCase().includes(query.toLowerCase());
    // The built-in policy is listed first; stored ones follow, oldest first.
    const offset = rootMatches ? 1 : 0;
    const { total: stored, rows } = await policyPage(
      this.prisma,
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

function validate(input: PolicyUpdateInput) {
  const name = input.name.trim();
  requireLength("input.name", name, { min: 1, max: 256 });
  requireLength("input.description", input.description ?? "", { max: 2000 });
  const unknown = input.privileges.filter((p) => canonicalPrivilege(p) === undefined);
  if (unknown.length > 0) {
    throw badInput(`input.privileges has unknown privileges ${unknown.join(", ")}; known: ${PRIVILEGES.join(", ")}`);
  }
  const users = input.actors.users ?? [];
  const groups = input.actors.groups ?? [];
  users.forEach((u, i) => parseUrnField(`input.actors.users[${i}]`, u, "corpuser"));
  groups.forEach((g, i) => parseUrnField(`input.actors.groups[${i}]`, g, "corpGroup"));
  return {
    type: input.type ?? "PLATFORM",
    name,
    description: input.description ?? null,
    state: input.state,
    // Stored as ours: a DataHub spelling (GET_ENTITY_PRIVILEGE) reads back as the privilege it grants (GET_ENTITY).
    privileges: [...new Set(input.privileges.map((p) => canonicalPrivilege(p)!))],
    users: [...new Set(users)],
    groups: [...new Set(groups)],
    allUsers: input.actors.allUsers ?? false,
  };
}
