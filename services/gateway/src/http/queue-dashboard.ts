import { createBullBoard } from "@bull-board/api";
import { BullMQAdapter } from "@bull-board/api/bullMQAdapter";
import { ExpressAdapter } from "@bull-board/express";
import type { Queue } from "bullmq";
import { Router, type Express, type RequestHandler } from "express";
import { abbreviated, AppError, badInput, forbidden, notFound } from "@mdp/core";
import { AuditBudget, type PrismaClient } from "@mdp/db";
import { QUEUE_NAMES } from "@mdp/queues";
import { recordAudit } from "../audit/audit.service";
import { actorOf } from "../auth/auth.middleware";
import type { PolicyEngine } from "../policies/policy-engine";
import { dashboardFonts } from "./dashboard-fonts";

export const DASHBOARD_PATH = "/admin/queues";

/**
 * The only writes the dashboard takes: retrying a failed job (on no queue this system has: see NOT_RETRIED) and
 * removing a finished one, one or all of a state at a time. Everything else Bull Board offers (adding, promoting, delaying, editing a job; running, updating a job
 * scheduler; pausing, emptying, obliterating a queue; and any route a later Bull Board adds) is refused, because
 * workers trust a job's data (whose it is, whether it pushes) and its timing (a scheduler's delayed job promoted is
 * the schedule fired now, as its owner): whoever may open the dashboard must not be able to act as anyone through it.
 * In Bull Board's route order (@bull-board/api 9 `routes.js`: `/:queue/retry/:status` before `/:queue/:job/retry`),
 * matched without regard to case as express matches them.
 */
const DASHBOARD_WRITES: ReadonlyArray<{ kind: WriteKind; path: RegExp; action: string; params: string[] }> = (
  [
    ["retryAll", "/api/queues/:queue/retry/:status", "queue.retryAll"],
    ["cleanAll", "/api/queues/:queue/clean/:status", "queue.clean"],
    ["retryJob", "/api/queues/:queue/:job/retry", "queue.retryJob"],
    ["removeJob", "/api/queues/:queue/:job/clean", "queue.removeJob"],
  ] as const
).map(([kind, route, action]) => {
  const params: string[] = [];
  const source = route.replace(/:(\w+)/g, (_m, name: string) => {
    params.push(name);
    return "([^/]+)";
  });
  return { kind, path: new RegExp(`^${source}/?$`, "i"), action, params };
});
type WriteKind = "retryAll" | "cleanAll" | "retryJob" | "removeJob";

/** Bull Board answers these methods without changing anything; every other one is a write. */
const READS = new Set(["GET", "HEAD"]);
/** A job's states the dashboard may remove (one job, or all of the state): finished ones only. */
const REMOVABLE = new Set(["failed", "completed"]);
/**
 * The queues whose jobs the dashboard never retries, and why: a retry runs the job again as the principal recorded in
 * it, with nobody checking now that the principal may still do it.
 * - The schedules queues: every job is a firing of a job scheduler (a retention policy's, a scheduled test's), and
 *   retrying one would fire its schedule now. Their own workers' next firing is the retry.
 * - The chores' queues (schedule-sync, truncation-chores, evaluation-chores): each job is a firing of a chore (or a
 *   sync a write asked for), and the chore's next firing is the retry.
 * - evaluate-tests: a job is a user's evaluation or test run, pushing results and running test actions as that user,
 *   whose privileges may since be gone; the user (or a schedule's next firing) runs it again.
 * - truncate-timeseries: a job is a deletion its creator asked for, and the truncation worker does not check at claim
 *   that the creator may still make it; a new truncation, checked as it is asked for, is the retry.
 * Every queue of QUEUE_NAMES is here: the dashboard retries nothing. A queue added later is retried only once it is
 * known that its worker re-checks its job's principal when it claims the job.
 */
const NOT_RETRIED: ReadonlyMap<string, string> = new Map<string, string>([
  [
    QUEUE_NAMES.retention,
    "each is a firing of a retention policy's job scheduler, and retrying it would fire the schedule now",
  ],
  [
    QUEUE_NAMES.testSchedule,
    "each is a firing of a scheduled test's job scheduler, and retrying it would fire the schedule now",
  ],
  [
    QUEUE_NAMES.scheduleSync,
    "each makes schedules' job schedulers follow their rows, and the next periodic sync (every minute) is the retry",
  ],
  [QUEUE_NAMES.truncationChores, "each is a firing of a chore's job scheduler, and its next firing is the retry"],
  [QUEUE_NAMES.evaluationChores, "each is a firing of a chore's job scheduler, and its next firing is the retry"],
  [QUEUE_NAMES.webhookChores, "each is a firing of a chore's job scheduler, and its next firing is the retry"],
  [QUEUE_NAMES.gatewayChores, "each is a firing of a chore's job scheduler, and its next firing is the retry"],
  [
    QUEUE_NAMES.evaluate,
    "each runs a user's evaluation or test run, pushing results and running test actions as that user, who may " +
      "no longer hold what it needs; ask for the evaluation or run again instead",
  ],
  [
    QUEUE_NAMES.truncate,
    "each is a deletion its creator asked for, and retrying it would delete again without checking that the creator " +
      "still may; start a new truncation (truncateTimeseriesAspect) instead",
  ],
]);
/** No job id this system issues is longer (task ids are UUIDs; a scheduler's job id holds its test urn, ≤ 512 bytes). */
const MAX_JOB_ID_LENGTH = 1024;

export interface DashboardWrite {
  kind: WriteKind;
  /** the audit action */
  action: string;
  /** what it names: queue, and job or status */
  details: Record<string, string>;
}

/** The dashboard write a request is, when it is one the dashboard takes; undefined for any other write. */
export function dashboardWrite(method: string, path: string): DashboardWrite | undefined {
  if (method !== "PUT") return undefined;
  for (const route of DASHBOARD_WRITES) {
    const match = route.path.exec(path);
    if (!match) continue;
    const details = Object.fromEntries(route.params.map((name, i) => [name, safeDecode(match[i + 1]!)]));
    return { kind: route.kind, action: route.action, details };
  }
  return undefined;
}

function safeDecode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

/**
 * Whether the write applies: the queue exists, and the job exists in a state the action applies to (or the status is
 * one the action takes). Throws the refusal otherwise. Checked before the audit row, so a refused write leaves none.
 */
async function checkWrite(queues: ReadonlyMap<string, Queue>, write: DashboardWrite): Promise<void> {
  const { queue: name, job: jobId, status } = write.details as { queue: string; job?: string; status?: string };
  const queue = queues.get(name);
  if (!queue) throw notFound(`The queue dashboard has no queue '${abbreviated(name)}'`);
  const retry = write.kind === "retryAll" || write.kind === "retryJob";
  const notRetried = NOT_RETRIED.get(queue.name); // a shard is its queue
  if (retry && notRetried !== undefined) {
    throw forbidden(`The queue dashboard does not retry jobs of ${name}: ${notRetried}.`);
  }
  if (status !== undefined) {
    const allowed = retry ? ["failed"] : [...REMOVABLE];
    if (!allowed.includes(status)) {
      throw badInput(
        `status must be ${allowed.join(" or ")}; the dashboard does not ${retry ? "retry" : "clean"} '${abbreviated(status)}' jobs`,
      );
    }
    return;
  }
  const job = jobId!.length > MAX_JOB_ID_LENGTH ? undefined : await queue.getJob(jobId!);
  if (!job) throw notFound(`The queue ${name} has no job '${abbreviated(jobId!)}'`);
  const state = await job.getState();
  if (retry ? state !== "failed" : !REMOVABLE.has(state)) {
    throw new AppError(
      "CONFLICT",
      `Job ${abbreviated(jobId!)} of ${name} is ${state}; the dashboard ${retry ? "retries only failed jobs" : "removes only failed or completed jobs"}`,
    );
  }
}

/**
 * Bull Board over the queues, for holders of MANAGE_SYSTEM_OPERATIONS only: it shows everything, and its only writes
 * (removing finished jobs; retrying failed ones, on no queue of NOT_RETRIED) are checked, then audited, then carried
 * out.
 */
export function queueDashboard(
  queues: Queue[],
  engine: PolicyEngine,
  prisma: PrismaClient,
  budget: AuditBudget = new AuditBudget(),
): { guard: RequestHandler; router: Router } {
  const serverAdapter = new ExpressAdapter();
  serverAdapter.setBasePath(DASHBOARD_PATH);
  // The shards of a sharded queue (QUEUE_SHARDS) share its BullMQ name, and Bull Board tells queues apart by name:
  // they come in shard order, the first keeping the queue's name, the others `name-1`, `name-2`, …
  const seen = new Map<string, number>();
  const named = queues.map((q) => {
    const shard = seen.get(q.name) ?? 0;
    seen.set(q.name, shard + 1);
    return { name: shard === 0 ? q.name : `${q.name}-${shard}`, queue: q };
  });
  // The page offers no retry where the dashboard refuses one; the guard below is what enforces what it takes.
  const adapters = named.map(({ name, queue }) => {
    const adapter = new BullMQAdapter(queue, { allowRetries: !NOT_RETRIED.has(queue.name) });
    adapter.getName = () => name;
    return adapter;
  });
  createBullBoard({ queues: adapters, serverAdapter });
  const byName = new Map(named.map(({ name, queue }) => [name, queue]));
  const guard: RequestHandler = async (req, res, next) => {
    try {
      const actor = actorOf(res.locals);
      if (!(await engine.has(actor, "MANAGE_SYSTEM_OPERATIONS"))) {
        throw new AppError("FORBIDDEN", `${actor.urn} is unauthorized to view the queue dashboard.`);
      }
      if (!READS.has(req.method)) {
        const write = dashboardWrite(req.method, req.path);
        if (!write) {
          throw notFound(
            `The queue dashboard has no action ${abbreviated(req.method, 16)} ${abbreviated(req.path)}: it only ` +
              `removes failed or completed jobs.`,
          );
        }
        await checkWrite(byName, write);
        // The row precedes the action and may not be dropped, so a caller past its share is refused instead.
        const retryAfterSeconds = budget.take(actor.urn);
        if (retryAfterSeconds > 0) {
          throw new AppError(
            "TOO_MANY_REQUESTS",
            `Rate limit exceeded: at most ${budget.capacity} queue dashboard writes at once, then ${budget.perMinute} ` +
              `per minute per actor; retry in ${retryAfterSeconds} s.`,
            { limit: "queue dashboard writes", perMinute: budget.perMinute, retryAfterSeconds },
          );
        }
        // Before the action, and refusing it when the row cannot be written: Redis and PostgreSQL share no
        // transaction, and an action done without its record is the failure an audit must not have.
        await recordAudit(prisma, actor, write.action, null, write.details);
      }
      next();
    } catch (error) {
      next(error);
    }
  };
  // Bull Board's router is an express app of its own, which would announce X-Powered-By on every page it serves.
  const board = serverAdapter.getRouter() as Express;
  board.disable("x-powered-by");
  // Its fonts from npm, not from Google (dashboard-fonts.ts): nothing the page loads leaves the gateway.
  const router = Router();
  router.use(dashboardFonts(), board);
  return { guard, router };
}
