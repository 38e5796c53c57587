import type { Logger, Privilege } from "@mdp/core";
import type { Database, PrismaClient, ScheduledWork } from "@mdp/db";
import type {
  CronSchedules,
  Payload,
  Producer,
  RateLimitName,
  RateLimits,
  ScheduleKindName,
  ScheduleSyncRequests,
} from "@mdp/queues";
import type { Queue } from "bullmq";
import type { TaskLifecycle } from "@mdp/tasks";

/** What every schedule's row says of who it acts for and whether it is suspended. */
export interface OwnedRow {
  ownerUrn: string;
  ownerTokenId: string | null;
  suspendedAt: Date | null;
}

/** The queues a kind's firings arrive on: one job per firing of one of its job schedulers. */
export type FiringQueue = "testSchedule" | "retention";

/** What a firing may use: the kind takes the producer of the queue its task goes to. */
export interface FiringDeps {
  db: Database;
  tasks: TaskLifecycle;
  logger: Logger;
  /** ROOT_USER_URN: the root user's built-in policy counts when the owner's privileges are read */
  rootUserUrn: string;
  urnNamespace: string;
  /** where a firing that finds its row gone or unscheduled asks for its scheduler to go (the one writer removes it) */
  sync: Pick<ScheduleSyncRequests, "request">;
  /** the gateway's per-actor limits, on the same Redis keys (a kind with `rateLimit` counts each firing there) */
  rateLimits?: Pick<RateLimits, "consume">;
  /** the queue of the task a firing creates: evaluate-tests (runTest), truncate-timeseries (a truncation) */
  producers: { evaluate?: Producer<"evaluate">; truncate?: Producer<"truncate"> };
}

/**
 * One kind of scheduled work (docs/scheduled-tests.md): a row that carries a cron and an owner, a BullMQ job
 * scheduler per row (written only by the schedule sync), and what each firing creates. Everything else — reading
 * the owner's current privileges, suspending, counting the firing against the owner's limit, logging and the
 * result each firing's job keeps — is the one runner's (schedule-firing.ts), the same for every kind.
 */
export interface ScheduleKind<Row extends OwnedRow = OwnedRow, Q extends FiringQueue = FiringQueue> {
  name: ScheduleKindName;
  /** what the log lines call one ("scheduled test") */
  label: string;
  firingQueue: Q;
  /** the id of the row a firing's job names */
  idOf(payload: Payload<Q>): string;
  /** the kind's job schedulers, on its firing queue */
  schedules(queue: Queue): CronSchedules<Q>;
  /** the scheduler id (within the kind's CronSchedules) of the row `id` */
  scheduleId(id: string): string;
  load(prisma: PrismaClient, id: string): Promise<Row | null>;
  /** every row that has a schedule: its id and cron (the sync's source of truth) */
  list(prisma: PrismaClient): Promise<Array<{ id: string; cron: string }>>;
  /** the row's cron; null: it has no schedule (any scheduler of it is a leftover) */
  cronOf(row: Row): string | null;
  urnOf(row: Row, urnNamespace: string): string;
  /** the suspension's subject (libs/db scheduled-work.ts) */
  work(row: Row, urn: string): ScheduledWork;
  /** what a firing needs of its owner now */
  needs(row: Row): Privilege[];
  /** why a firing starts nothing though the owner may (an INACTIVE test), else undefined */
  idle?(row: Row): string | undefined;
  /** the per-actor limit each firing counts against (RATE_LIMITS' key), and the refusal's audit action */
  rateLimit?: { limit: RateLimitName; action: string };
  /** the audit action of a suspension (`test.schedule.suspended`) */
  suspendedAction: string;
  /** the audit action of slots that could not run (Redis lost the schedule's job scheduler across them) */
  missedAction: string;
  /** the audit's `via` of what its firings do, where a request's says how its caller authenticated */
  via: string;
  /** creates the firing's task (deduplicated, audited in the task's transaction) and queues its job */
  create(row: Row, urn: string, deps: FiringDeps): Promise<{ taskId: string; existing: boolean }>;
}
