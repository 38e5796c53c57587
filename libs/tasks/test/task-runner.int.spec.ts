/**
 * The task runner with a task type of its own (real PostgreSQL, a stand-in job): each step commits with its progress,
 * a retry resumes after the last committed step, cancellation and ctx.fail end the task at a checkpoint, a step of an
 * attempt that lost its lease rolls back, and a queue whose task kind has no definition refuses to start.
 */
import { UnrecoverableError, type Job } from "bullmq";
import { z } from "zod";
import { createLogger } from "@mdp/core";
import { createDatabase, type Database } from "@mdp/db";
import { createTestDatabase, type TestDatabase } from "@mdp/db/testing";
import { JobCancelledError } from "@mdp/queues";
import { defineTask, TaskLifecycle, TaskRunner, type TaskDefinition } from "../src";

const logger = createLogger("test", "silent");
const STEPS = 5;

describe("task runner", () => {
  let testDb: TestDatabase;
  let db: Database;
  let tasks: TaskLifecycle;

  beforeAll(async () => {
    testDb = await createTestDatabase("tasks_runner");
    db = createDatabase(testDb.url);
    tasks = new TaskLifecycle(db, logger);
    await db.pool.query("CREATE TABLE effect (task_id text, n int, PRIMARY KEY (task_id, n))");
  });
  afterAll(async () => {
    await db.close();
    await testDb.drop();
  });

  /** During step `n` of an attempt: what the test makes happen then. */
  type Hook = (n: number, taskId: string, attempt: number) => Promise<void> | void;

  /** A task of STEPS steps; step n records n in `effect` and `done = n` in the progress, in one transaction. */
  const counting = (hook: Hook = () => undefined): TaskDefinition =>
    defineTask({
      kind: "truncate",
      input: z.object({ taskId: z.string() }),
      progress: z.object({ done: z.number().int().default(0) }),
      percent: (p) => (100 * p.done) / STEPS,
      async plan({ progress }, _client, round) {
        if (round > 0) return { steps: [] };
        return { steps: Array.from({ length: STEPS - progress.done }, (_, i) => progress.done + i + 1) };
      },
      async step({ input, task }, n: number, client) {
        await client.query("INSERT INTO effect VALUES ($1, $2)", [input.taskId, n]);
        await hook(n, input.taskId, task.attemptsMade + 1);
        return { progress: (stored) => ({ done: Math.max(stored.done, n) }) };
      },
      result: (p) => ({ done: p.done }),
      requeuePayload: (task) => ({ taskId: task.id }),
    });

  const newTask = async () =>
    (
      await tasks.create(
        { type: "TRUNCATE_TIMESERIES", request: {}, progress: {}, createdBy: "urn:li:corpuser:a", what: "a task" },
        { enqueue: async () => undefined, jobExists: async () => true },
      )
    ).taskId;
  const job = (attemptsMade = 0) =>
    ({ attemptsMade, opts: { attempts: 3 }, updateProgress: async () => undefined }) as unknown as Job;
  const run = (definition: TaskDefinition, taskId: string, attemptsMade = 0) =>
    new TaskRunner({ db, tasks, logger, shutdownSignal: new AbortController().signal }, "truncate", [definition])
      .handler("truncate")({ taskId }, job(attemptsMade), "token")
      .catch((error: unknown) => error);
  const effects = async (taskId: string) =>
    (await db.pool.query<{ n: number }>("SELECT n FROM effect WHERE task_id = $1 ORDER BY n", [taskId])).rows.map(
      (r) => r.n,
    );

  it("commits each step with its progress and completes with the result", async () => {
    const taskId = await newTask();
    expect(await run(counting(), taskId)).toEqual({ done: STEPS });
    const row = await tasks.read(taskId);
    expect(row).toMatchObject({ state: "completed", progress: { done: STEPS }, result: { done: STEPS } });
    expect(await effects(taskId)).toEqual([1, 2, 3, 4, 5]);
  });

  it("retries after the last committed step: no step's effect twice, none lost", async () => {
    const taskId = await newTask();
    const failing = counting((n, _id, attempt) => {
      if (n === 3 && attempt === 1) throw new Error("the database hiccuped");
    });
    const first = await run(failing, taskId);
    expect(first).toBeInstanceOf(Error);
    expect(await tasks.read(taskId)).toMatchObject({
      state: "waiting",
      progress: { done: 2 },
      failedReason: "Attempt 1 failed, retrying: the database hiccuped",
    });
    expect(await run(failing, taskId, 1)).toEqual({ done: STEPS });
    expect(await effects(taskId)).toEqual([1, 2, 3, 4, 5]);
  });

  it("stops at the checkpoint after a cancel, keeping what committed", async () => {
    const taskId = await newTask();
    const cancelling = counting(async (n, id) => {
      if (n === 2) await db.pool.query("UPDATE task SET cancel_requested = true WHERE id = $1", [id]);
    });
    expect(await run(cancelling, taskId)).toBeInstanceOf(JobCancelledError);
    expect(await tasks.read(taskId)).toMatchObject({ state: "cancelled", progress: { done: 2 } });
    expect(await effects(taskId)).toEqual([1, 2]);
  });

  it("ends the task failed when a step calls ctx.fail, rolling that step back", async () => {
    const taskId = await newTask();
    const definition = counting();
    const step = definition.step.bind(definition);
    definition.step = async (ctx, n, client) => (n === 4 ? ctx.fail("the test was deleted") : step(ctx, n, client));
    const error = await run(definition, taskId);
    expect(error).toBeInstanceOf(UnrecoverableError);
    expect(await tasks.read(taskId)).toMatchObject({
      state: "failed",
      failedReason: "the test was deleted",
      progress: { done: 3 },
    });
    expect(await effects(taskId)).toEqual([1, 2, 3]);
  });

  it("rolls back the step of an attempt whose lease another attempt took over", async () => {
    const taskId = await newTask();
    const takenOver = counting(async (n, id) => {
      if (n === 2) await db.pool.query("UPDATE task SET lease_token = 'another attempt' WHERE id = $1", [id]);
    });
    await run(takenOver, taskId);
    expect(await tasks.read(taskId)).toMatchObject({ state: "active", progress: { done: 1 } });
    expect(await effects(taskId)).toEqual([1]);
  });

  it("parses stored progress with its schema's defaults (a row written before a field existed)", async () => {
    const taskId = await newTask();
    await db.pool.query(`UPDATE task SET progress = '{"legacy": true}' WHERE id = $1`, [taskId]);
    expect(await run(counting(), taskId)).toEqual({ done: STEPS });
  });

  it("refuses to start a queue whose task kind has no definition, or a definition on the wrong queue", () => {
    const deps = { db, tasks, logger, shutdownSignal: new AbortController().signal };
    expect(() => new TaskRunner(deps, "truncate", [])).toThrow(
      "No handler for task kind(s) truncate of queue truncate",
    );
    expect(() => new TaskRunner(deps, "evaluate", [counting()])).toThrow(
      "Task kind truncate runs on queue truncate, not evaluate",
    );
  });
});
