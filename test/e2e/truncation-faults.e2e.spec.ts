/**
 * Truncation under faults, with the real gateway and truncation-worker processes: a worker killed with SIGKILL
 * mid-task (another resumes it within one lease), a worker stopped with SIGTERM mid-task, PostgreSQL connections cut mid-task, and the task's job vanishing from Redis (as after a Redis restart
 * without persistence). Each time the task completes with an exact count and its row tells what happened.
 */
import { Queue } from "bullmq";
import { createDatabase, DAY_MILLIS, type Database } from "@mdp/db";
import { DAY, loadDay as loadRows, remaining as rowsLeft, ROWS } from "../support/truncation-rows";
import { createTestDatabase } from "@mdp/db/testing";
import { closeRedis, createRedis, QUEUE_NAMES } from "@mdp/queues";
import {
  freePort,
  startService,
  uniqueName,
  waitFor,
  waitForOutput,
  waitUntilReady,
  type RunningService,
  systemClient,
} from "../support/services";

const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";
const headers = systemClient();
/** The workers' task lease (@mdp/tasks' DEFAULT_LEASE_MS), and what a resume may take beyond it (a claim, a poll). */
const LEASE_MS = 10_000;
const RESUME_MARGIN_MS = 2_000;

interface TaskStatus {
  state: string;
  attemptsMade: number;
  failedReason: string | null;
  progress: { deleted: number; toDelete: number; batches: number; percent: number };
}

describe("truncation under faults", () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  let database: Database;
  let gateway: RunningService;
  const workers: RunningService[] = [];
  let baseUrl: string;
  let env: Record<string, string>;

  const post = async (action: string, body: unknown) => {
    const res = await fetch(`${baseUrl}/gms/operations?action=${action}`, {
      method: "POST",
      headers,
      body: JSON.stringify(body),
    });
    return (await res.json()) as { value: unknown };
  };
  const status = async (taskId: string) => (await post("getTaskStatus", { taskId })).value as TaskStatus;
  const startWorker = async () => {
    const worker = startService("truncation-worker", env);
    workers.push(worker);
    await waitForOutput(worker, "worker running");
    return worker;
  };
  const loadDay = (cutoff: number) => loadRows(database.pool, cutoff);
  const remaining = (cutoff: number) => rowsLeft(database.pool, cutoff);
  const truncate = async (cutoff: number, batchSize: number) =>
    (
      await post("truncateTimeseriesAspect", {
        entityType: "dataset",
        aspect: "datasetProfile",
        endTimeMillis: cutoff,
        dryRun: false,
        batchSize,
      })
    ).value as string;
  const until = (taskId: string, done: (s: TaskStatus) => boolean, timeoutMs = 60_000) =>
    waitFor(`task ${taskId}`, async () => done(await status(taskId)), timeoutMs);

  beforeAll(async () => {
    db = await createTestDatabase("e2e_faults");
    database = createDatabase(db.url);
    const port = await freePort();
    baseUrl = `http://127.0.0.1:${port}`;
    env = { DATABASE_URL: db.url, REDIS_URL, QUEUE_PREFIX: uniqueName("e2e-faults"), PORT: String(port) };
    gateway = startService("gateway", env);
    await waitUntilReady(baseUrl, gateway);
  });

  afterAll(async () => {
    await Promise.all([gateway, ...workers].map((s) => s?.stop()));
    await database?.close();
    await db?.drop();
  });

  afterEach(async () => {
    await Promise.all(workers.splice(0).map((w) => w.stop("SIGKILL")));
  });

  it("resumes a task whose worker was killed with SIGKILL in another worker within one lease, with an exact count", async () => {
    const cutoff = DAY + Math.floor((2 * DAY_MILLIS) / 3);
    const toGo = await loadDay(cutoff);
    const [one, two] = await Promise.all([startWorker(), startWorker()]);
    const taskId = await truncate(cutoff, 250);
    await until(taskId, (s) => s.progress.deleted > 0 && s.state === "active");
    // The worker process holding the task's lease (lease_owner is host:pid:random).
    const { rows } = await database.pool.query<{ owner: string }>(
      "SELECT lease_owner AS owner FROM task WHERE id = $1",
      [taskId],
    );
    const holder = [one!, two!].find((w) => rows[0]!.owner.includes(`:${w.process.pid}:`))!;
    holder.process.kill("SIGKILL");
    const killedAt = Date.now();
    expect((await status(taskId)).progress.deleted).toBeLessThan(toGo);

    // The other worker takes it over as soon as the dead one's lease lapses, not after a second lease's worth of
    // BullMQ's stall check.
    await until(taskId, (s) => s.attemptsMade === 2 && s.state !== "waiting", LEASE_MS + RESUME_MARGIN_MS);
    expect(Date.now() - killedAt).toBeLessThan(LEASE_MS + RESUME_MARGIN_MS);
    await until(taskId, (s) => s.state === "completed" || s.state === "failed");
    const end = await status(taskId);
    expect(end).toMatchObject({
      state: "completed",
      attemptsMade: 2,
      progress: { deleted: toGo, toDelete: toGo, percent: 100 },
    });
    expect(await remaining(cutoff)).toEqual({ older: 0, newer: ROWS - toGo });
  }, 90_000);

  it("hands a running task back on SIGTERM, and another worker finishes it", async () => {
    const cutoff = DAY + Math.floor((3 * DAY_MILLIS) / 4);
    const toGo = await loadDay(cutoff);
    const first = await startWorker();
    const taskId = await truncate(cutoff, 250);
    await until(taskId, (s) => s.progress.deleted > 0 && s.state === "active");
    const stoppedAt = Date.now();
    expect(await first.stop("SIGTERM")).toBe(0);
    expect(Date.now() - stoppedAt).toBeLessThan(5_000); // it did not run the task to the end first
    // Back in the queue, nothing running it: waiting, not active.
    expect(await status(taskId)).toMatchObject({ state: "waiting", progress: { deleted: expect.any(Number) } });
    expect((await status(taskId)).progress.deleted).toBeLessThan(toGo);

    await startWorker();
    await until(taskId, (s) => s.state === "completed" || s.state === "failed");
    expect(await status(taskId)).toMatchObject({ state: "completed", attemptsMade: 2, progress: { deleted: toGo } });
    expect(await remaining(cutoff)).toEqual({ older: 0, newer: ROWS - toGo });
  }, 60_000);

  it("cancels a task handed back on SIGTERM at once, saying what it deleted", async () => {
    const cutoff = DAY + Math.floor(DAY_MILLIS / 2);
    const toGo = await loadDay(cutoff);
    const first = await startWorker();
    const taskId = await truncate(cutoff, 250);
    await until(taskId, (s) => s.progress.deleted > 0 && s.state === "active");
    expect(await first.stop("SIGTERM")).toBe(0);
    const deleted = (await status(taskId)).progress.deleted;
    expect((await post("cancelTask", { taskId })).value).toMatchObject({
      state: "cancelled",
      failedReason: `Cancelled; ${deleted} rows were deleted before the cancellation`,
    });
    expect(await remaining(cutoff)).toEqual({ older: toGo - deleted, newer: ROWS - toGo });
  }, 60_000);

  it("neither the process nor the attempt fails when PostgreSQL connections drop mid-task: the task completes", async () => {
    const cutoff = DAY + Math.floor(DAY_MILLIS / 2);
    const toGo = await loadDay(cutoff);
    const worker = await startWorker();
    const taskId = await truncate(cutoff, 100);
    await until(taskId, (s) => s.progress.deleted > 0 && s.state === "active");
    // Hold the task's row, so the worker's next batch transaction waits on it with its rows deleted but not committed,
    // then cut every connection to this database but ours: that batch fails for certain. (Cut between two batches, the
    // worker's pool would only lose idle connections and the attempt could go on unharmed.)
    const holder = await database.pool.connect();
    try {
      await holder.query("BEGIN");
      await holder.query("SELECT 1 FROM task WHERE id = $1 FOR UPDATE", [taskId]);
      await waitFor("the worker's batch to wait on the task row", async () => {
        // From another connection: inside the holder's transaction pg_stat_activity would stay one snapshot.
        const { rows } = await database.pool.query<{ waiting: number }>(
          `SELECT count(*)::int AS waiting FROM pg_stat_activity
            WHERE datname = current_database() AND wait_event_type = 'Lock'`,
        );
        return rows[0]!.waiting > 0;
      });
      await holder.query(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()",
      );
    } finally {
      await holder.query("ROLLBACK");
      holder.release();
    }
    await until(taskId, (s) => s.state === "completed" || s.state === "failed").catch(async (e: Error) => {
      throw new Error(`${e.message}: ${JSON.stringify(await status(taskId))}\n${worker.output().slice(-3000)}`);
    });
    expect(worker.process.exitCode).toBeNull(); // still running
    const end = await status(taskId);
    expect(end.state).toBe("completed");
    // A dropped connection is an outage, not the work failing: the step waits and goes on in the same attempt.
    expect(end.attemptsMade).toBe(1);
    expect(end.progress.deleted).toBe(toGo);
    expect(await remaining(cutoff)).toEqual({ older: 0, newer: ROWS - toGo });
  }, 90_000);

  it("re-queues a task whose job vanished from Redis, and completes it", async () => {
    const cutoff = DAY + Math.floor(DAY_MILLIS / 3);
    const toGo = await loadDay(cutoff);
    const taskId = await truncate(cutoff, 5_000); // no worker yet: the task waits
    const connection = createRedis(REDIS_URL, "worker");
    const queue = new Queue(QUEUE_NAMES.truncate, { connection, prefix: env.QUEUE_PREFIX });
    expect(await queue.getJob(taskId)).toBeDefined();
    await queue.obliterate({ force: true }); // what a Redis restart without persistence leaves
    expect(await queue.getJob(taskId)).toBeUndefined();
    await queue.close();
    await closeRedis(connection);

    await startWorker(); // reconciles at start
    await until(taskId, (s) => s.state === "completed" || s.state === "failed");
    expect(await status(taskId)).toMatchObject({ state: "completed", progress: { deleted: toGo } });
    expect(await remaining(cutoff)).toEqual({ older: 0, newer: ROWS - toGo });
  }, 60_000);
});
