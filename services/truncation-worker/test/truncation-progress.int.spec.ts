/**
 * What a truncation task reports (real PostgreSQL, the handler called directly with a stand-in job): toDelete and
 * percent after a resume, batches when the rows are an exact multiple of batchSize, and two overlapping tasks.
 */
import type { Job } from "bullmq";
import { createLogger } from "@mdp/core";
import { createDatabase, inTransaction, TimeseriesStore, type Database, type TimeseriesAspectRef } from "@mdp/db";
import { createTestDatabase, type TestDatabase } from "@mdp/db/testing";
import { TaskLifecycle } from "@mdp/tasks";
import { createTruncateHandler } from "../src/truncate.processor";

const PROFILE: TimeseriesAspectRef = { entityType: "dataset", aspectName: "datasetProfile" };
const T0 = Date.UTC(2026, 0, 1);
const logger = createLogger("test", "silent");

describe("truncation progress", () => {
  let testDb: TestDatabase;
  let db: Database;
  let store: TimeseriesStore;
  let tasks: TaskLifecycle;

  beforeAll(async () => {
    testDb = await createTestDatabase("truncation_progress");
    db = createDatabase(testDb.url);
    store = new TimeseriesStore(db.pool);
    tasks = new TaskLifecycle(db, logger);
  });
  afterAll(async () => {
    await db.close();
    await testDb.drop();
  });

  /** `count` rows inside one day, one per millisecond from T0. */
  const load = async (count: number) => {
    const rows = Array.from({ length: count }, (_, i) => ({
      urn: `urn:li:dataset:(urn:li:dataPlatform:x,t${i % 7},PROD)`,
      timestampMillis: T0 + i,
      valueJson: "{}",
    }));
    await store.prepare([{ ...PROFILE, rows }]);
    await inTransaction(db.pool, (client) => store.append(client, PROFILE, rows));
  };
  const left = async () => (await store.partitions(PROFILE)).reduce((n, p) => n + p.rowCount, 0);
  const payloadOf = (taskId: string, endTimeMillis: number, batchSize: number) => ({
    taskId,
    entityType: "dataset",
    aspect: "datasetProfile",
    endTimeMillis,
    batchSize,
  });
  const newTask = async (endTimeMillis: number, batchSize: number) => {
    const { taskId } = await tasks.create(
      {
        type: "TRUNCATE_TIMESERIES",
        request: { ...payloadOf("", endTimeMillis, batchSize), dryRun: false },
        progress: { deleted: 0, toDelete: 0, batches: 0, percent: 0 },
        createdBy: "urn:li:corpuser:admin",
        what: "a truncation task",
      },
      { enqueue: async () => undefined, jobExists: async () => true },
    );
    return taskId;
  };
  /**
   * Runs the handler as a worker would. `stopAfterSteps`: the process is asked to stop after that many steps, so the
   * attempt hands the task back (as on SIGTERM).
   */
  const run = async (taskId: string, endTimeMillis: number, batchSize: number, stopAfterSteps?: number) => {
    const shutdown = new AbortController();
    let steps = 0;
    const job = {
      attemptsMade: 0,
      opts: { attempts: 3 },
      updateProgress: async () => {
        if (++steps === stopAfterSteps) shutdown.abort();
      },
      moveToDelayed: async () => undefined,
    } as unknown as Job;
    const handler = createTruncateHandler({ db, store, tasks, logger, shutdownSignal: shutdown.signal });
    return handler(payloadOf(taskId, endTimeMillis, batchSize), job, "token").catch((error: Error) => error);
  };
  const progressOf = async (taskId: string) => (await tasks.read(taskId))!.progress;

  beforeEach(async () => {
    const { rows } = await db.pool.query<{ table_name: string }>("SELECT table_name FROM timeseries.aspect_table");
    for (const r of rows) await db.pool.query(`DROP TABLE timeseries."${r.table_name}"`);
    await db.pool.query("DELETE FROM timeseries.aspect_table");
    store = new TimeseriesStore(db.pool);
  });

  it("records toDelete on the attempt after one that died while planning (it had set startedAt)", async () => {
    await load(500);
    const taskId = await newTask(T0 + 500, 100);
    // What an attempt killed while it planned leaves: started, active, nothing recorded, its lease lapsed.
    await db.pool.query("UPDATE task SET state = 'active', started_at = now(), attempts_made = 1 WHERE id = $1", [
      taskId,
    ]);
    await run(taskId, T0 + 500, 100, 1); // one batch, then handed back
    expect(await progressOf(taskId)).toMatchObject({ deleted: 100, toDelete: 500, batches: 1, percent: 20 });
    expect(await left()).toBe(400);
    await run(taskId, T0 + 500, 100);
    expect(await tasks.read(taskId)).toMatchObject({
      state: "completed",
      attemptsMade: 3,
      progress: { deleted: 500, toDelete: 500, batches: 5, percent: 100 },
    });
  });

  it("counts only batches that deleted rows when the rows are an exact multiple of batchSize", async () => {
    await load(600);
    const taskId = await newTask(T0 + 600, 100);
    expect(await run(taskId, T0 + 600, 100)).toMatchObject({ deleted: 600, batches: 6 });
    expect(await progressOf(taskId)).toMatchObject({ deleted: 600, toDelete: 600, batches: 6, percent: 100 });
  });

  it("two overlapping tasks on one aspect each end reporting what it deleted itself, at 100 %", async () => {
    await load(1000);
    const wide = await newTask(T0 + 1000, 100);
    const narrow = await newTask(T0 + 500, 100);
    await run(wide, T0 + 1000, 100, 1); // the wide one deletes a batch, then is handed back
    expect(await progressOf(wide)).toMatchObject({ deleted: 100, toDelete: 1000, percent: 10 });
    await run(narrow, T0 + 500, 100); // meanwhile the narrow one deletes the rest of the older half
    await run(wide, T0 + 1000, 100);
    const a = await progressOf(wide);
    const b = await progressOf(narrow);
    expect(b).toMatchObject({ deleted: 400, toDelete: 400, batches: 4, percent: 100 });
    expect(a).toMatchObject({ deleted: 600, toDelete: 600, batches: 6, percent: 100 });
    expect(await left()).toBe(0);
  });
});
