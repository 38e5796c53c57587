import { randomUUID } from "node:crypto";
import { z } from "zod";
import {
  AppError,
  badInput,
  conflict,
  makeUrn,
  notFound,
  parseUrnField,
  type Config,
  type EntityRegistry,
  type Logger,
} from "@mdp/core";
import {
  countRetentionPolicies,
  type Database,
  deleteRetentionPolicy,
  findRetentionPolicy,
  inPrismaTransaction,
  insertRetentionPolicy,
  listScheduleSlots,
  lockRetentionPolicy,
  lockRetentionPolicyCount,
  lockScheduleOwner,
  type Prisma,
  replicaReads,
  requireScheduleRoom,
  type RetentionPolicy,
  retentionRunRequest,
  updateRetentionPolicy,
} from "@mdp/db";
import { nextCronFiring, type RetentionSchedules, type ScheduleSyncRequests } from "@mdp/queues";
import { presentState, TaskLifecycle } from "@mdp/tasks";
import { recordAudit } from "../audit/audit.service";
import { ownedBy, type Actor } from "../auth/actor";
import { parseInput } from "../shared/validate";
import type { TruncationService } from "../operations/truncation.service";
import {
  createRetentionPolicyInput,
  listRetentionPoliciesArgs,
  MAX_RETENTION_POLICIES,
  type RetentionPolicyView,
  updateRetentionPolicyInput,
} from "./retention-contracts";

const URN_TYPE = "retentionPolicy";

export interface RetentionServiceDeps {
  db: Database;
  registry: EntityRegistry;
  truncation: TruncationService;
  /** read for the policies' next runs (the schedule sync alone writes them) */
  schedules: RetentionSchedules;
  scheduleSync: Pick<ScheduleSyncRequests, "request">;
  logger: Logger;
  config: Pick<Config, "URN_NAMESPACE" | "SCHEDULE_MIN_INTERVAL_SECONDS" | "MAX_SCHEDULES_PER_USER">;
}

/**
 * Retention policies (docs/api.md "Retention policies"): MANAGE_SYSTEM_OPERATIONS for every operation.
 * The row is the source of truth and is written (with its audit row) first; then the schedule sync (@mdp/schedules,
 * the one writer of job schedulers, run by the workers) is asked to make its BullMQ job scheduler follow. When Redis
 * refuses the request the answer still succeeds and the policy shows no nextRunTime: the sync makes every schedule
 * match the rows every minute, so it converges.
 */
export class RetentionService {
  private readonly tasks: TaskLifecycle;

  private readonly db: Database;
  private readonly registry: EntityRegistry;
  private readonly truncation: TruncationService;
  private readonly schedules: RetentionSchedules;
  private readonly scheduleSync: RetentionServiceDeps["scheduleSync"];
  private readonly logger: Logger;
  private readonly config: RetentionServiceDeps["config"];

  constructor(deps: RetentionServiceDeps) {
    this.db = deps.db;
    this.registry = deps.registry;
    this.truncation = deps.truncation;
    this.schedules = deps.schedules;
    this.scheduleSync = deps.scheduleSync;
    this.logger = deps.logger;
    this.config = deps.config;
    this.tasks = new TaskLifecycle(deps.db, deps.logger);
  }

  async create(actor: Actor, input: unknown): Promise<RetentionPolicyView> {
    const parsed = parseInput(
      z.strictObject({ input: createRetentionPolicyInput(this.config.SCHEDULE_MIN_INTERVAL_SECONDS) }),
      {
        input,
      },
    ).input;
    const data = { ...parsed, aspect: this.aspectOf(parsed.entityType, parsed.aspect) };
    const id = randomUUID();
    const row = await inPrismaTransaction(this.db.prisma, async (tx) => {
      // One count at a time: two creations racing for the last place cannot both take it.
      await lockRetentionPolicyCount(tx);
      if ((await countRetentionPolicies(tx)) >= MAX_RETENTION_POLICIES) {
        throw conflict(
          `There are already ${MAX_RETENTION_POLICIES} retention policies, the limit; delete one before creating another.`,
        );
      }
      await lockScheduleOwner(tx, actor.urn);
      await requireScheduleRoom(tx, actor.urn, this.config.MAX_SCHEDULES_PER_USER);
      const created = await insertRetentionPolicy(tx, { id, ...data, createdBy: actor.urn, ...ownedBy(actor) });
      await recordAudit(tx, actor, "retentionPolicy.create", this.urnOf(id), data);
      return created;
    });
    return this.scheduledView(row, await this.schedule(row));
  }

  async update(actor: Actor, urn: string, input: unknown): Promise<RetentionPolicyView> {
    const id = this.idOf(urn);
    const changes = parseInput(
      z.strictObject({ input: updateRetentionPolicyInput(this.config.SCHEDULE_MIN_INTERVAL_SECONDS) }),
      {
        input,
      },
    ).input;
    const row = await inPrismaTransaction(this.db.prisma, async (tx) => {
      // Every field is what the policy does: whoever changes one owns it from then on (its runs act for them).
      await lockScheduleOwner(tx, actor.urn);
      const current = await this.locked(tx, id, urn);
      if (current.ownerUrn !== actor.urn) {
        await requireScheduleRoom(tx, actor.urn, this.config.MAX_SCHEDULES_PER_USER);
      }
      const entityType = changes.entityType ?? current.entityType;
      const data = {
        ...changes,
        ...(changes.entityType !== undefined || changes.aspect !== undefined
          ? { aspect: this.aspectOf(entityType, changes.aspect ?? current.aspect) }
          : {}),
      };
      const updated = await updateRetentionPolicy(tx, id, {
        ...data,
        ...ownedBy(actor),
        suspendedAt: null,
        suspendedReason: null,
      });
      await recordAudit(tx, actor, "retentionPolicy.update", urn, {
        ...data,
        ...(current.ownerUrn !== actor.urn && { previousOwner: current.ownerUrn }),
      });
      return updated;
    });
    return this.scheduledView(row, await this.schedule(row));
  }

  /**
   * resumeRetentionPolicy: a suspended policy runs again on its schedule, for the caller, who becomes its owner (it
   * holds MANAGE_SYSTEM_OPERATIONS, and has room under MAX_SCHEDULES_PER_USER). Audited as `retentionPolicy.resume`.
   * 409 when the policy is not suspended.
   */
  async resume(actor: Actor, urn: string): Promise<RetentionPolicyView> {
    const id = this.idOf(urn);
    const row = await inPrismaTransaction(this.db.prisma, async (tx) => {
      await lockScheduleOwner(tx, actor.urn);
      const current = await this.locked(tx, id, urn);
      if (current.suspendedAt === null) throw conflict(`Retention policy ${urn} is not suspended`);
      if (current.ownerUrn !== actor.urn) {
        await requireScheduleRoom(tx, actor.urn, this.config.MAX_SCHEDULES_PER_USER);
      }
      const resumed = await updateRetentionPolicy(tx, id, {
        ...ownedBy(actor),
        suspendedAt: null,
        suspendedReason: null,
      });
      await recordAudit(tx, actor, "retentionPolicy.resume", urn, {
        previousOwner: current.ownerUrn,
        suspendedReason: current.suspendedReason,
      });
      return resumed;
    });
    return (await this.views([row]))[0]!;
  }

  async delete(actor: Actor, urn: string): Promise<boolean> {
    const id = this.idOf(urn);
    await inPrismaTransaction(this.db.prisma, async (tx) => {
      const current = await this.locked(tx, id, urn);
      await deleteRetentionPolicy(tx, id);
      await recordAudit(tx, actor, "retentionPolicy.delete", urn, {
        entityType: current.entityType,
        aspect: current.aspect,
        retainDays: current.retainDays,
        cron: current.cron,
      });
    });
    // A running task of the policy finishes; only the schedule goes. A scheduler left after this (the request
    // refused here) is removed by the periodic sync, or asked for by the firing that finds no policy.
    await this.schedule({ id });
    return true;
  }

  async get(actor: Actor, urn: string): Promise<RetentionPolicyView | null> {
    const row = await this.find(this.idOf(urn));
    return row ? (await this.views([row]))[0]! : null;
  }

  async list({ input: { start, count } }: z.output<typeof listRetentionPoliciesArgs>) {
    const { total, rows } = await replicaReads.retentionPolicyPage(this.db.stale, start, count);
    const retentionPolicies = await this.views(rows);
    return { start, count: rows.length, total, retentionPolicies };
  }

  /**
   * runRetentionPolicy: with dryRun (the default) truncateTimeseriesAspect's dry-run report for the policy's cutoff,
   * from the same code; otherwise the policy's truncation task (joined when its previous one is still running).
   */
  async run(actor: Actor, urn: string, dryRun = true): Promise<string> {
    const policy = await this.find(this.idOf(urn));
    if (!policy) throw notFound(`No retention policy ${urn}`);
    const request = retentionRunRequest(policy, urn, Date.now());
    if (dryRun) {
      const { entityType, aspect, endTimeMillis } = request;
      return (await this.truncation.truncate(actor, { entityType, aspect, endTimeMillis, dryRun: true })).value;
    }
    return this.truncation.startRetentionRun(actor, policy.id, request);
  }

  // ---- helpers ---------------------------------------------------------------------------------------------------

  private urnOf(id: string): string {
    return makeUrn(this.config.URN_NAMESPACE, URN_TYPE, id);
  }

  /** The id of a policy urn; a well-formed urn of an id no policy can have is simply not found. */
  private idOf(urn: string): string {
    const parsed = parseUrnField("urn", urn, URN_TYPE);
    if (!z.uuid().safeParse(parsed.id).success) throw notFound(`No retention policy ${urn}`);
    return parsed.id;
  }

  private find(id: string) {
    return findRetentionPolicy(this.db.prisma, id);
  }

  /** The row, locked for the rest of the transaction; 404 when there is none. */
  private async locked(tx: Prisma.TransactionClient, id: string, urn: string): Promise<RetentionPolicy> {
    const row = await lockRetentionPolicy(tx, id);
    if (!row) throw notFound(`No retention policy ${urn}`);
    return row;
  }

  /** The registered name of a time-series aspect; a 400 naming the field when there is none. */
  private aspectOf(entityType: string, aspect: string): string {
    try {
      return this.registry.timeseriesIndex(entityType, aspect).aspectName;
    } catch (error) {
      if (error instanceof AppError && error.code === "NOT_FOUND") {
        throw badInput(`Invalid request: input.aspect: ${error.message}`);
      }
      throw error;
    }
  }

  /** Asks the schedule sync to make the policy's scheduler follow its row; whether Redis took the request. */
  private async schedule(policy: Pick<RetentionPolicy, "id">): Promise<boolean> {
    try {
      await this.scheduleSync.request("retentionPolicy", policy.id);
      return true;
    } catch (error) {
      this.logger.warn(
        { err: error, policy: this.urnOf(policy.id) },
        "could not ask for a retention policy's schedule to follow; the periodic schedule sync will",
      );
      return false;
    }
  }

  /**
   * A written policy's view: its next run is the one its cron gives (what the sync's scheduler will fire, computed as
   * BullMQ computes it), or null when Redis refused the sync request, as before the scheduler exists.
   */
  private async scheduledView(row: RetentionPolicy, syncAsked: boolean): Promise<RetentionPolicyView> {
    const view = (await this.views([row]))[0]!;
    return { ...view, nextRunTime: syncAsked ? (nextCronFiring(row.cron) ?? null) : null };
  }

  private async views(rows: RetentionPolicy[]): Promise<RetentionPolicyView[]> {
    // The row is the answer: with Redis unreachable it shows no next run rather than failing after the row committed
    // (a client's retry would then create a second policy).
    const next = await this.schedules.nextRuns(rows.map((r) => r.id)).catch((error: unknown) => {
      this.logger.warn({ err: error }, "could not read retention policies' next runs; showing none");
      return new Map<string, number>();
    });
    // At most MAX_RETENTION_POLICIES reads, each by primary key.
    const lastTasks = await Promise.all(
      rows.map((r) => (r.lastTaskId ? this.tasks.read(r.lastTaskId) : Promise.resolve(null))),
    );
    const slots = new Map(
      (
        await listScheduleSlots(
          this.db.prisma,
          "retentionPolicy",
          rows.map((r) => r.id),
        )
      ).map((s) => [s.scheduleId, s]),
    );
    return rows.map((row, i) => {
      const task = lastTasks[i];
      const slot = slots.get(row.id);
      return {
        urn: this.urnOf(row.id),
        entityType: row.entityType,
        aspect: row.aspect,
        retainDays: row.retainDays,
        cron: row.cron,
        nextRunTime: next.get(row.id) ?? null,
        lastTaskId: row.lastTaskId,
        lastTaskState: task ? presentState(task).state : null,
        createdBy: row.createdBy,
        ownerUrn: row.ownerUrn,
        suspendedAt: row.suspendedAt?.getTime() ?? null,
        suspendedReason: row.suspendedReason,
        missedRuns: slot?.missedRuns ?? 0,
        lastMissedAt: slot?.lastMissedAt?.getTime() ?? null,
        createdAt: row.createdAt.getTime(),
        updatedAt: row.updatedAt.getTime(),
      };
    });
  }
}
