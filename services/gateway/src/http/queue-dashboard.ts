import { createBullBoard } from "@bull-board/api";
import { BullMQAdapter } from "@bull-board/api/bullMQAdapter";
import { ExpressAdapter } from "@bull-board/express";
import type { Queue } from "bullmq";
import type { Express, RequestHandler } from "express";
import { abbreviated, AppError } from "@mdp/core";
import type { PrismaClient } from "@mdp/db";
import { recordAudit } from "../audit/audit.service";
import { actorOf } from "../auth/auth.middleware";
import type { PolicyEngine } from "../policies/policy-engine";

export const DASHBOARD_PATH = "/admin/queues";

/**
 * The write routes of Bull Board's API (@bull-board/api 9 `routes.js`, in its order, which decides between
 * `/:queue/retry/:status` and `/:queue/:job/retry` as its router does) the dashboard may take, and the audit action
 * each records. A write that matches none is refused, so a Bull Board upgrade adding a write cannot act unaudited.
 * Left out on purpose: adding a job, editing a job's data, and updating or running a job scheduler. Workers trust a
 * job's data (its actorUrn, an evaluation's push), so those would let a dashboard user act as anyone.
 */
const DASHBOARD_WRITES: ReadonlyArray<{ method: string; path: RegExp; action: string; params: string[] }> = [
  ["POST", "/api/metrics/history/purge", "queue.purgeMetricsHistory"],
  ["PUT", "/api/queues/pause", "queue.pauseAll"],
  ["PUT", "/api/queues/resume", "queue.resumeAll"],
  ["PUT", "/api/queues/:queue/retry/:status", "queue.retryAll"],
  ["PUT", "/api/queues/:queue/promote", "queue.promoteAll"],
  ["PUT", "/api/queues/:queue/clean/:status", "queue.clean"],
  ["PUT", "/api/queues/:queue/pause", "queue.pause"],
  ["PUT", "/api/queues/:queue/resume", "queue.resume"],
  ["PUT", "/api/queues/:queue/concurrency", "queue.setConcurrency"],
  ["PUT", "/api/queues/:queue/rate-limit", "queue.setRateLimit"],
  ["PUT", "/api/queues/:queue/rate-limit/release", "queue.releaseRateLimit"],
  ["PUT", "/api/queues/:queue/empty", "queue.empty"],
  ["PUT", "/api/queues/:queue/obliterate", "queue.obliterate"],
  ["PUT", "/api/queues/:queue/job-schedulers/:scheduler/remove", "queue.removeJobScheduler"],
  ["PUT", "/api/queues/:queue/:job/retry", "queue.retryJob"],
  ["PUT", "/api/queues/:queue/:job/clean", "queue.removeJob"],
  ["PUT", "/api/queues/:queue/:job/promote", "queue.promoteJob"],
  ["PATCH", "/api/queues/:queue/:job/delay", "queue.changeJobDelay"],
  ["PATCH", "/api/queues/:queue/:job/priority", "queue.changeJobPriority"],
  ["PUT", "/api/queues/:queue/:job/remove-unprocessed-children", "queue.removeUnprocessedChildren"],
].map(([method, route, action]) => {
  const params: string[] = [];
  const source = route!.replace(/:(\w+)/g, (_m, name: string) => {
    params.push(name);
    return "([^/]+)";
  });
  return { method: method!, path: new RegExp(`^${source}/?$`), action: action!, params };
});

const READS = new Set(["GET", "HEAD", "OPTIONS"]);

/** The audit action of a dashboard write and what it names (queue, job, status, scheduler), or undefined. */
export function dashboardWrite(
  method: string,
  path: string,
): { action: string; details: Record<string, string> } | undefined {
  for (const route of DASHBOARD_WRITES) {
    if (route.method !== method) continue;
    const match = route.path.exec(path);
    if (!match) continue;
    const details = Object.fromEntries(route.params.map((name, i) => [name, safeDecode(match[i + 1]!)]));
    return { action: route.action, details };
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

/** Bull Board over both queues, for holders of MANAGE_SYSTEM_OPERATIONS only; every write it takes is audited. */
export function queueDashboard(
  queues: Queue[],
  engine: PolicyEngine,
  prisma: PrismaClient,
): { guard: RequestHandler; router: Express } {
  const serverAdapter = new ExpressAdapter();
  serverAdapter.setBasePath(DASHBOARD_PATH);
  createBullBoard({ queues: queues.map((q) => new BullMQAdapter(q)), serverAdapter });
  const guard: RequestHandler = async (req, res, next) => {
    try {
      const actor = actorOf(res.locals);
      if (!(await engine.has(actor, "MANAGE_SYSTEM_OPERATIONS"))) {
        throw new AppError("FORBIDDEN", `${actor.urn} is unauthorized to view the queue dashboard.`);
      }
      if (!READS.has(req.method)) {
        const write = dashboardWrite(req.method, req.path);
        if (!write)
          throw new AppError("NOT_FOUND", `The queue dashboard has no action ${req.method} ${abbreviated(req.path)}`);
        // Before the action, and refusing it when the row cannot be written: Redis and PostgreSQL share no
        // transaction, and an action done without its record is the failure an audit must not have. A row therefore
        // records an action the gateway let through, even one Bull Board then finds nothing to do for.
        await recordAudit(prisma, actor, write.action, null, write.details);
      }
      next();
    } catch (error) {
      next(error);
    }
  };
  // Bull Board's router is an express app of its own, which would announce X-Powered-By on every page it serves.
  const router = serverAdapter.getRouter() as Express;
  router.disable("x-powered-by");
  return { guard, router };
}
