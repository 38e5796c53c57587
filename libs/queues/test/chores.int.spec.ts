/**
 * A cluster-wide chore (chores.ts) on real Redis with two worker processes' worth of `startChores` on one queue: each
 * firing of the chore's job scheduler runs once in the whole cluster, not once per replica; a scheduler Redis lost is
 * put back by the per-process check, and two replicas checking at once add no firing; on a queue of global
 * concurrency 1 (schedule-sync) two replicas never run two jobs at once.
 */
import { randomUUID } from "node:crypto";
import type { Job } from "bullmq";
import { createLogger } from "@mdp/core";
import { eventually } from "@mdp/core/testing";
import { closeRedis, createRedis, Producer, startChores, type RedisConnection, type RunningChores } from "../src";

const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";
const EVERY_MS = 300;

describe("chores", () => {
  const prefix = `{test-chores-${randomUUID()}}`;
  const logger = createLogger("chores-test", "silent");
  const connections: RedisConnection[] = [];
  const replicas: RunningChores[] = [];
  /** each run: which replica ran it, and its job (the scheduler's job id names its slot: repeat:<chore>:<millis>) */
  const runs: Array<{ replica: number; jobId: string }> = [];

  const startReplica = (replica: number) => {
    const connection = createRedis(REDIS_URL, "worker");
    const producerConnection = createRedis(REDIS_URL, "worker");
    connections.push(connection, producerConnection);
    const chore = {
      name: "count-runs",
      everyMs: EVERY_MS,
      run: async (_: unknown, job: Job) => {
        runs.push({ replica, jobId: job.id! });
        return { replica };
      },
    };
    const running = startChores("truncationChores", [chore], { connection, producerConnection, prefix, logger });
    replicas.push(running);
    return running;
  };

  afterAll(async () => {
    await Promise.all(replicas.map((r) => r.stop()));
    await Promise.all(connections.map((c) => closeRedis(c)));
  });

  it("runs each firing once in the cluster, whichever of two replicas takes it", async () => {
    const [a, b] = [startReplica(1), startReplica(2)];
    await Promise.all([a.ensureSchedulers(), b.ensureSchedulers()]);
    await eventually("eight runs of the chore", () => runs.length >= 8, { timeoutMs: 20_000 });
    await Promise.all(replicas.map((r) => r.worker.pause()));

    // Every run is its own firing: no job ran twice, and no two runs share a slot of the scheduler, as two replicas'
    // own timers (or two schedulers) would make them.
    const ids = runs.map((r) => r.jobId);
    expect(new Set(ids).size).toBe(ids.length);
    const slots = ids.map((id) => Number(id.split(":").at(-1))).sort((x, y) => x - y);
    for (let i = 1; i < slots.length; i++) expect(slots[i]! - slots[i - 1]!).toBeGreaterThanOrEqual(EVERY_MS);
    expect(ids.every((id) => id.startsWith("repeat:count-runs:"))).toBe(true);
    // One scheduler, named for the chore, however many replicas upserted it.
    const schedulers = await a.producer.queue.getJobSchedulers(0, -1);
    expect(schedulers.map((s) => [s.key, s.name, Number(s.every)])).toEqual([["count-runs", "count-runs", EVERY_MS]]);
  }, 30_000);

  it("puts back a scheduler that Redis lost", async () => {
    const [a] = replicas;
    await a!.producer.queue.removeJobScheduler("count-runs");
    expect(await a!.producer.queue.getJobScheduler("count-runs")).toBeUndefined();
    await a!.ensureSchedulers();
    expect(await a!.producer.queue.getJobScheduler("count-runs")).toMatchObject({ every: EVERY_MS });
    await a!.producer.queue.obliterate({ force: true });
  });

  it("runs one job at a time in the whole cluster on a queue of global concurrency 1", async () => {
    const syncPrefix = `{test-chores-sync-${randomUUID()}}`;
    let running = 0;
    let most = 0;
    let done = 0;
    const chore = {
      name: "sync-schedule",
      run: async () => {
        running++;
        most = Math.max(most, running);
        for (let i = 0; i < 3; i++) await connections[0]!.ping(); // a few round trips, so an overlap would show
        running--;
        done++;
        return undefined;
      },
    };
    const started = [1, 2].map(() => {
      const connection = createRedis(REDIS_URL, "worker");
      const producerConnection = createRedis(REDIS_URL, "worker");
      connections.push(connection, producerConnection);
      const replica = startChores("scheduleSync", [chore], {
        connection,
        producerConnection,
        prefix: syncPrefix,
        logger,
        globalConcurrency: 1,
      });
      replicas.push(replica);
      return replica;
    });
    await Promise.all(started.map((r) => r.ensureSchedulers()));
    const producer = new Producer("scheduleSync", connections.at(-1)!, syncPrefix);
    for (let i = 0; i < 20; i++) await producer.enqueue(randomUUID(), {});
    await eventually("twenty syncs", () => done >= 20, { timeoutMs: 20_000 });
    expect(most).toBe(1);
    expect(await producer.queue.getGlobalConcurrency()).toBe(1);
    await producer.queue.obliterate({ force: true });
    await producer.close();
  }, 30_000);

  it("logs at info only the firings that did something: a terminal running the services is no scroll of them", async () => {
    const quietPrefix = `{test-chores-quiet-${randomUUID()}}`;
    const lines: Array<{ level: number; msg: string; moved?: number }> = [];
    const seen = createLogger("chores-test", "info", { write: (line: string) => void lines.push(JSON.parse(line)) });
    let firings = 0;
    const chore = { name: "tidy", everyMs: EVERY_MS, run: async () => ({ moved: firings++ % 2 }) };
    const connection = createRedis(REDIS_URL, "worker");
    const producerConnection = createRedis(REDIS_URL, "worker");
    connections.push(connection, producerConnection);
    const replica = startChores("truncationChores", [chore], {
      connection,
      producerConnection,
      prefix: quietPrefix,
      logger: seen,
    });
    replicas.push(replica);
    const ran = () => lines.filter((l) => l.msg === "tidy: ran");
    await eventually("two firings that moved something", () => ran().length >= 2, { timeoutMs: 20_000 }).catch(
      (error: Error) => {
        // A rare cluster-stage timeout here left no clue: say what the chores logged at warn and above, and how far
        // the firings got.
        const warned = lines.filter((l) => l.level >= 40).map((l) => l.msg);
        throw new Error(`${error.message} (${firings} firings; logged at warn and above: ${JSON.stringify(warned)})`);
      },
    );
    await replica.worker.pause();
    // each firing that moved something says so at info; the others (as many), and every job started/ended, at debug
    expect(firings).toBeGreaterThanOrEqual(3);
    expect(ran().every((l) => l.moved === 1)).toBe(true);
    expect(lines.filter((l) => l.msg === "job started" || l.msg === "job ended")).toEqual([]);
    await replica.producer.queue.obliterate({ force: true });
  }, 30_000);
});
