import { randomUUID } from "node:crypto";
import { badInput, conflict, notFound, parseUrnField, requireLength, urnOfNewId, type Config } from "@mdp/core";
import {
  addGroupMembers,
  groupExists,
  groupPage,
  inPrismaTransaction,
  insertGroup,
  isUniqueViolation,
  removeGroupMembers,
  type Prisma,
  type PrismaClient,
} from "@mdp/db";
import type { Actor } from "../auth/actor";
import { recordAudit } from "../audit/audit.service";
import type { InvalidationBus } from "../events/invalidation-bus";
import { pageOf } from "../graphql/paging";
import type { PolicyEngine } from "./policy-engine";

/** Groups and their members (policies can name groups). Every change needs MANAGE_POLICIES and is audited. */
export class GroupService {
  constructor(
    private readonly prisma: PrismaClient,
    private readonly engine: PolicyEngine,
    private readonly bus: InvalidationBus,
    private readonly config: Pick<Config, "URN_NAMESPACE">,
  ) {}

  async create(
    actor: Actor,
    input: { id?: string | null; name: string; description?: string | null },
  ): Promise<string> {
    await this.engine.require(actor, "MANAGE_POLICIES", "create groups");
    const urn = urnOfNewId("input.id", input.id, {
      namespace: this.config.URN_NAMESPACE,
      entityType: "corpGroup",
      generate: randomUUID,
    });
    const name = input.name.trim();
    requireLength("input.name", name, { min: 1, max: 256 });
    requireLength("input.description", input.description ?? "", { max: 2000 });
    try {
      await inPrismaTransaction(this.prisma, async (tx) => {
        await insertGroup(tx, { urn, name, description: input.description ?? null });
        await recordAudit(tx, actor, "group.create", urn, { name });
      });
    } catch (error) {
      if (isUniqueViolation(error)) throw conflict(`Group ${urn} already exists`);
      throw error;
    }
    return urn;
  }

  async addMembers(actor: Actor, input: { groupUrn: string; userUrns: string[] }): Promise<boolean> {
    await this.engine.require(actor, "MANAGE_POLICIES", "change group members");
    parseUrnField("input.groupUrn", input.groupUrn, "corpGroup");
    const users = this.validUsers(input.userUrns);
    await inPrismaTransaction(this.prisma, async (tx) => {
      await this.existing(tx, input.groupUrn);
      await addGroupMembers(tx, input.groupUrn, users);
      await recordAudit(tx, actor, "group.addMembers", input.groupUrn, { userUrns: users });
    });
    await this.bus.publish({ kind: "policies-changed" });
    return true;
  }

  async removeMembers(actor: Actor, input: { groupUrn: string; userUrns: string[] }): Promise<boolean> {
    await this.engine.require(actor, "MANAGE_POLICIES", "change group members");
    parseUrnField("input.groupUrn", input.groupUrn, "corpGroup");
    const users = this.validUsers(input.userUrns);
    await inPrismaTransaction(this.prisma, async (tx) => {
      await this.existing(tx, input.groupUrn);
      await removeGroupMembers(tx, input.groupUrn, users);
      await recordAudit(tx, actor, "group.removeMembers", input.groupUrn, { userUrns: users });
    });
    await this.bus.publish({ kind: "policies-changed" });
    return true;
  }

  async list(actor: Actor, input: { start?: number | null; count?: number | null; query?: string | null }) {
    await this.engine.require(actor, "MANAGE_POLICIES", "list groups");
    const { start, count } = pageOf(input);
    const query = input.query?.trim();
    const { total, rows: groups } = await groupPage(this.prisma, query || undefined, start, count);
    return { start, count: groups.length, total, groups };
  }

  private validUsers(userUrns: string[]): string[] {
    if (userUrns.length === 0) throw badInput("input.userUrns must name at least one user");
    userUrns.forEach((u, i) => parseUrnField(`input.userUrns[${i}]`, u, "corpuser"));
    return [...new Set(userUrns)];
  }

  private async existing(tx: Prisma.TransactionClient, groupUrn: string): Promise<void> {
    if (!(await groupExists(tx, groupUrn))) {
      throw notFound(`Group ${groupUrn} does not exist`);
    }
  }
}
