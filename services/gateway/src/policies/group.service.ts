import { z } from "zod";
import { conflict, notFound, type Config } from "@mdp/core";
import {
  addGroupMembers,
  groupExists,
  inPrismaTransaction,
  insertGroup,
  isUniqueViolation,
  type Prisma,
  type PrismaClient,
  removeGroupMembers,
  replicaReads,
  type StaleReads,
} from "@mdp/db";
import type { Actor } from "../auth/actor";
import { recordAudit } from "../audit/audit.service";
import type { InvalidationBus } from "../events/invalidation-bus";
import { pageInput } from "../shared/paging";
import { newUrnField, said, textField, urnField } from "../shared/validate";

const URN_TYPE = "corpGroup";

/** createGroup's arguments; `namespace` makes the urn of the id given (or generated). */
export const createGroupArgs = (namespace: string) =>
  z.object({
    input: z.object({
      // Parsed into the group's urn.
      id: newUrnField(namespace, URN_TYPE),
      name: textField({ min: 1, max: 256, trim: true }),
      description: textField({ max: 2000 })
        .nullish()
        .transform((description) => description ?? null),
    }),
  });
/** addGroupMembers' and removeGroupMembers' arguments: the users, each once. */
export const groupMembersArgs = z.object({
  input: z.object({
    groupUrn: urnField(URN_TYPE),
    userUrns: z
      .array(urnField("corpuser"))
      .min(
        1,
        said((at) => `${at} must name at least one user`),
      )
      .transform((urns) => [...new Set(urns)]),
  }),
});
export const listGroupsArgs = pageInput({ query: z.string().nullish() });

/**
 * Groups and their members (policies can name groups). Every operation needs MANAGE_POLICIES (declared with the
 * arguments' contracts in policies.graphql.ts); every change is audited.
 */
export class GroupService {
  /** createGroup's contract, with this deployment's urn namespace */
  readonly createArgs: ReturnType<typeof createGroupArgs>;

  constructor(
    private readonly prisma: PrismaClient,
    private readonly bus: InvalidationBus,
    private readonly config: Pick<Config, "URN_NAMESPACE">,
    /** where the listing reads (Database.stale) */
    private readonly reads: StaleReads,
  ) {
    this.createArgs = createGroupArgs(config.URN_NAMESPACE);
  }

  async create(actor: Actor, { input }: z.output<ReturnType<typeof createGroupArgs>>): Promise<string> {
    const { id: urn, name, description } = input;
    try {
      await inPrismaTransaction(this.prisma, async (tx) => {
        await insertGroup(tx, { urn, name, description });
        await recordAudit(tx, actor, "group.create", urn, { name });
      });
    } catch (error) {
      if (isUniqueViolation(error)) throw conflict(`Group ${urn} already exists`);
      throw error;
    }
    return urn;
  }

  async addMembers(actor: Actor, { input }: z.output<typeof groupMembersArgs>): Promise<boolean> {
    const { groupUrn, userUrns: users } = input;
    await inPrismaTransaction(this.prisma, async (tx) => {
      await this.existing(tx, groupUrn);
      await addGroupMembers(tx, groupUrn, users);
      await recordAudit(tx, actor, "group.addMembers", groupUrn, { userUrns: users });
    });
    await this.bus.publish({ kind: "policies-changed" });
    return true;
  }

  async removeMembers(actor: Actor, { input }: z.output<typeof groupMembersArgs>): Promise<boolean> {
    const { groupUrn, userUrns: users } = input;
    await inPrismaTransaction(this.prisma, async (tx) => {
      await this.existing(tx, groupUrn);
      await removeGroupMembers(tx, groupUrn, users);
      await recordAudit(tx, actor, "group.removeMembers", groupUrn, { userUrns: users });
    });
    await this.bus.publish({ kind: "policies-changed" });
    return true;
  }

  async list({ input: { start, count, ...input } }: z.output<typeof listGroupsArgs>) {
    const query = input.query?.trim();
    const { total, rows: groups } = await replicaReads.groupPage(this.reads, query || undefined, start, count);
    return { start, count: groups.length, total, groups };
  }

  private async existing(tx: Prisma.TransactionClient, groupUrn: string): Promise<void> {
    if (!(await groupExists(tx, groupUrn))) {
      throw notFound(`Group ${groupUrn} does not exist`);
    }
  }
}
