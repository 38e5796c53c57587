/**
 * bench/cost's floors of evaluation, measured in the same run on the same private PostgreSQL and Redis, and their goals
 * (goals.ts):
 * - evaluate: http-floor-server.ts's `/batched` (bare express, the requests read together put into one BullMQ job, as
 *   the gateway batches them) in front of evaluating-worker.ts (a bare BullMQ worker reading the entity's aspects and
 *   evaluating the same tests in process), on a queue prefix and name of their own, loaded as evaluate is, in one
 *   window: the gateway's CPU per request against the floor server's, the evaluation worker's against the bare
 *   worker's. Then, as a reference (not a goal), the evaluation worker's against the same bare worker evaluating in a
 *   thread pool configured as the evaluation worker's (IN_THREADS=1), in a window of its own; and the gateway's against
 *   the floor server behind the protections every gateway request pays, as their libraries give them
 *   (../support/floor-protections.ts, FLOOR_PROTECTIONS), in front of the in-process bare worker. In ROUNDS rounds, each
 *   evaluate's window and then these three.
 * - runTest with push: run-test-floor.ts (the same datasets read in the worker's batches, the test evaluated in
 *   process, one multi-row INSERT of testResults versions per batch), one pass in a window after an unmeasured one:
 *   the evaluation worker's CPU per thousand entities against that process's, PostgreSQL's against PostgreSQL's. And
 *   as references (printed apart, not counted), the same against that process with GUARANTEES=1 in a window of its
 *   own: also each version's MetadataChangeLog_v1 event, the history with its flip events, the run diff and the
 *   outbox sequencer's numbering, bare (run-test-guarantees.ts); and against the same with IN_THREADS=1 too, its batches
 *   evaluated in a thread pool as the evaluation worker's (run-test-thread.ts).
 */
import type { ChildProcess } from "node:child_process";
import path from "node:path";
import { Redis } from "ioredis";
import type { Pool } from "pg";
import { DEFAULT_RUN_BATCH_SIZE } from "@mdp/queues";
import { freePort, uniqueName } from "../../test/support/services";
import { spawnBenchProcess } from "../support/bench-process";
import { asKept, asReference, fromRounds, goalOf, medianCost, ROUNDS, type Goal } from "./goals";
import { cannon, Meter, type Cost } from "./meter";
import type { PrivateStack } from "./private-stack";
import type { Measured } from "./proc";

/** each process's CPU at most this many times its floor's */
const LIMIT = 1.5;
const WORKER_CONCURRENCY = 8; // EVALUATION_CONCURRENCY's default
const LOAD_GENERATOR: Measured = { name: "load generator", pid: process.pid };

/** Resolves with the first line of `child`'s stdout that starts with `prefix`; rejects if it exits first. */
function lineOf(child: ChildProcess, prefix: string, timeoutMs = 60_000): Promise<string> {
  if (child.exitCode !== null || child.signalCode !== null) {
    return Promise.reject(new Error(`exited (${child.exitCode ?? child.signalCode}) before '${prefix}'`));
  }
  return new Promise((resolve, reject) => {
    let output = "";
    const done = (error?: Error, line?: string) => {
      clearTimeout(timer);
      child.stdout!.off("data", onData);
      child.off("exit", onExit);
      if (error) reject(error);
      else resolve(line!);
    };
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const lines = output.split("\n");
      output = lines.pop()!;
      const line = lines.find((l) => l.startsWith(prefix));
      if (line !== undefined) done(undefined, line);
    };
    const onExit = (code: number | null) => done(new Error(`exited (${code}) before '${prefix}'`));
    const timer = setTimeout(() => done(new Error(`timed out waiting for '${prefix}'`)), timeoutMs);
    child.stdout!.on("data", onData);
    child.once("exit", onExit);
  });
}

function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.once("exit", () => resolve());
    child.kill("SIGTERM");
  });
}

/** The in-process and the threaded bare worker (evaluating-worker.ts, IN_THREADS), as their windows name them. */
const BARE_WORKER = "bare evaluating worker";
const THREADED_WORKER = "bare evaluating worker, threads";
/** evaluate's floor server, bare and behind the protections (FLOOR_PROTECTIONS), as their windows name them */
const SERVER = "http floor server";
const PROTECTED_SERVER = "protected http floor server";
const PROTECTED_WHAT = "bare express /batched behind the libraries' protections";
/**
 * runTest's guarantees floor evaluating in threads, with the batch's locks and the merge onto its stored results: the
 * floor that keeps what runTest's push keeps, as its window names it
 */
const THREADED_FLOOR = "run-test floor with guarantees, in threads";

/**
 * evaluate's floors, warmed up, then loaded as `evaluate` is (`connections` on `/batched`, `seconds`), each in a
 * window of its own behind the same floor server, in rounds after evaluate's own window (its median is returned): the bare worker evaluating in process, then the same worker
 * evaluating in a thread pool configured as the evaluation worker's. The goals of the gateway and the evaluation worker
 * against the first, and the evaluation worker against the second as a reference (what keeping evaluation off the
 * event loop costs is in that floor). Run while only the seeded tests exist (before runTest's test): the bare worker
 * evaluates every ACTIVE test of the entity's type, as the evaluation worker does.
 */
export async function evaluateFloorGoals(ctx: {
  stack: PrivateStack;
  /** evaluate's window (the gateway's and the evaluation worker's), measured once a round before its floors' */
  evaluate: () => Promise<Cost>;
  entity: string;
  /** the bearer token evaluate's requests carry: the protected floor server accepts it */
  bearer: string;
  connections: number;
  seconds: number;
  warmUpSeconds: number;
}): Promise<{ goals: Goal[]; cost: Cost }> {
  const port = await freePort();
  let protectedPort = await freePort();
  while (protectedPort === port) protectedPort = await freePort();
  const queueEnv = { REDIS_URL: ctx.stack.redisUrl, QUEUE_PREFIX: uniqueName("bench-cost-floor") };
  // Each server on a queue of its own, so that neither's QueueEvents reads the other's jobs' events.
  const serverFile = path.join(__dirname, "../evaluate/http-floor-server.ts");
  const server = spawnBenchProcess(serverFile, { ...queueEnv, QUEUE_NAME: "evaluate-floor", PORT: String(port) });
  const guarded = spawnBenchProcess(serverFile, {
    ...queueEnv,
    QUEUE_NAME: "evaluate-floor-protected",
    PORT: String(protectedPort),
    FLOOR_PROTECTIONS: "1",
    FLOOR_BEARER: ctx.bearer,
  });
  const target = {
    url: `http://127.0.0.1:${port}/batched`,
    headers: { "content-type": "application/json" },
    body: "{}",
  };
  const servers = {
    bare: { name: SERVER, pid: server.pid!, queue: "evaluate-floor", target },
    guarded: {
      name: PROTECTED_SERVER,
      pid: guarded.pid!,
      queue: "evaluate-floor-protected",
      target: {
        url: `http://127.0.0.1:${protectedPort}/batched`,
        headers: { ...target.headers, authorization: `Bearer ${ctx.bearer}` },
        body: "{}",
      },
    },
  };
  // The jobs a floor server added (BullMQ's id counter): how many requests a job carried, which the worker's timing
  // decides (the server puts into one job what arrives together), and on which its CPU per request depends.
  const redis = new Redis(ctx.stack.redisUrl, { maxRetriesPerRequest: 1 });
  const jobsAdded = async (queue: string) => Number((await redis.get(`${queueEnv.QUEUE_PREFIX}:${queue}:id`)) ?? 0);
  // One bare worker on the floor's queue at a time: started, warmed up, measured, stopped.
  const floorWindow = async (name: string, inThreads: boolean, via = servers.bare) => {
    const worker = spawnBenchProcess(path.join(__dirname, "evaluating-worker.ts"), {
      ...queueEnv,
      QUEUE_NAME: via.queue,
      DATABASE_URL: ctx.stack.databaseUrl,
      ENTITY_URN: ctx.entity,
      CONCURRENCY: String(WORKER_CONCURRENCY),
      IN_THREADS: inThreads ? "1" : "0",
    });
    try {
      const ready = await lineOf(worker, "bare evaluating worker running");
      await cannon([via.target], ctx.connections, ctx.warmUpSeconds);
      const meter = new Meter(
        [
          { name: via.name, pid: via.pid },
          { name, pid: worker.pid! },
          { name: "PostgreSQL", pid: ctx.stack.postmasterPid, tree: true },
          { name: "Redis", pid: ctx.stack.redisPid },
          LOAD_GENERATOR,
        ],
        ctx.stack,
      );
      await meter.measureRest(2);
      let jobs = -(await jobsAdded(via.queue));
      const label = `floor: evaluate${inThreads ? ", threads" : ""}${via === servers.bare ? "" : ", protected"}`;
      const cost = await meter.window(label, "request", async () => {
        const units = await cannon([via.target], ctx.connections, ctx.seconds);
        jobs += await jobsAdded(via.queue);
        return { units };
      });
      return {
        cost: { ...cost, note: `${jobs} jobs (${(cost.units / jobs).toFixed(1)} requests each)` },
        tests: /\((\d+) tests/.exec(ready)?.[1] ?? "?",
        threads: /(\d+) threads/.exec(ready)?.[1],
      };
    } finally {
      await stop(worker);
    }
  };
  const line = (floor: Cost) =>
    `${floor.units} requests in ${floor.note} in ${floor.seconds.toFixed(1)} s (load average ${floor.load}); CPU per request ` +
    Object.entries(floor.cpu)
      .map(([name, s]) => `${name} ${(s * 1e6).toFixed(0)} µs`)
      .join(", ") +
    `; Redis commands ${floor.commands.toFixed(2)}, PostgreSQL statements ${floor.statements.toFixed(2)} per request`;
  /** one round: evaluate's window, then its floors', each printed */
  const round = async (): Promise<{ goals: Goal[]; evaluate: Cost }> => {
    const evaluate = await ctx.evaluate();
    const { cost: floor, tests } = await floorWindow(BARE_WORKER, false);
    process.stdout.write(
      `\nfloor of evaluate (bare express /batched → bare BullMQ worker reading the entity and evaluating its ${tests} ` +
        `tests in process): ${line(floor)}\n`,
    );
    const { cost: threaded, threads } = await floorWindow(THREADED_WORKER, true);
    const times = threaded.cpu[THREADED_WORKER]! / floor.cpu[BARE_WORKER]!;
    process.stdout.write(
      `\nfloor of evaluate in threads (the same, evaluating in a piscina pool of ${threads} threads as the evaluation ` +
        `worker's): ${line(threaded)}; the bare worker's CPU per request ${times.toFixed(2)}× in process\n`,
    );
    const { cost: withProtections } = await floorWindow(BARE_WORKER, false, servers.guarded);
    process.stdout.write(
      `\nfloor of evaluate behind protections (the same, the floor server behind the protections every gateway ` +
        `request pays, as their libraries give them): ${line(withProtections)}\n`,
    );
    const gateway = goalOf(evaluate, "gateway", floor, SERVER, "bare express /batched", LIMIT);
    const inProcess = `bare BullMQ worker, ${tests} tests in process`;
    const worker = goalOf(evaluate, "evaluation worker", floor, BARE_WORKER, inProcess, LIMIT);
    const goals = [
      gateway,
      worker,
      asReference(
        goalOf(
          evaluate,
          "evaluation worker",
          threaded,
          THREADED_WORKER,
          `bare BullMQ worker, ${tests} tests in a pool of ${threads} threads`,
          LIMIT,
        ),
      ),
      asReference(goalOf(evaluate, "gateway", withProtections, PROTECTED_SERVER, PROTECTED_WHAT, LIMIT)),
      asKept(goalOf(withProtections, PROTECTED_SERVER, floor, SERVER, "bare express /batched", LIMIT), gateway),
      asKept(goalOf(threaded, THREADED_WORKER, floor, BARE_WORKER, inProcess, LIMIT), worker),
    ];
    return { goals, evaluate };
  };
  try {
    await lineOf(server, "http floor server listening");
    await lineOf(guarded, "http floor server listening");
    const rounds: Awaited<ReturnType<typeof round>>[] = [];
    for (let r = 0; r < ROUNDS; r++) rounds.push(await round());
    return {
      goals: fromRounds(rounds.map((r) => r.goals)),
      cost: medianCost(
        rounds.map((r) => r.evaluate),
        "evaluation worker",
      ),
    };
  } finally {
    redis.disconnect();
    await stop(server);
    await stop(guarded);
  }
}

/**
 * runTest with push against its floors, in rounds: run-test-floor.ts over the same datasets and test, the same with
 * GUARANTEES=1 ("the floor with its guarantees": also each version's event, the history, the run diff and the
 * sequencer's numbering, bare), and that in threads with the batch's locks and the merge onto its stored results
 * (IN_THREADS=1: what runTest's push keeps), each two unmeasured passes first; then ROUNDS rounds, each the
 * product's push window (`push`, a test's first run with push: see runTests) then FLOOR_PASSES passes of each floor,
 * each in a window of its own, pooled, per thousand entities; before each window every testResults version but the
 * product's latest is deleted (EARLIER_RESULTS). The goals of the evaluation worker and PostgreSQL against the plain
 * floor, the same against the guarantees floors as references: each ratio the median of the rounds'. Answers the goals
 * and the product's windows (the cost table takes the median one).
 */
export async function runTestFloorGoals(ctx: {
  stack: PrivateStack;
  pool: Pick<Pool, "query">;
  /** one measured window of the product's runTest with push (a round's) */
  push: () => Promise<Cost>;
  testUrn: string;
}): Promise<{ goals: Goal[]; pushes: Cost[] }> {
  const env = {
    DATABASE_URL: ctx.stack.databaseUrl,
    TEST_URN: ctx.testUrn,
    BATCH_SIZE: String(DEFAULT_RUN_BATCH_SIZE),
  };
  const file = path.join(__dirname, "run-test-floor.ts");
  const plain = spawnBenchProcess(file, env);
  const guaranteed = spawnBenchProcess(file, { ...env, GUARANTEES: "1" });
  const threaded = spawnBenchProcess(file, { ...env, GUARANTEES: "1", IN_THREADS: "1" });
  const pass = async (floorProcess: ChildProcess) => {
    const done = lineOf(floorProcess, "run-test floor done", 600_000);
    floorProcess.kill("SIGUSR2");
    const [evaluated, written, gcMs] = (await done).split(" ").slice(-3).map(Number) as [number, number, number];
    return { evaluated, written, gcMs };
  };
  try {
    await Promise.all(
      [plain, guaranteed, threaded].map((floorProcess) => lineOf(floorProcess, "run-test floor ready")),
    );
    // warm-ups: V8 compiles, and the pages are read, as the product's earlier windows did for it; two passes, as the
    // product gets two pushes (each of the threaded floor's 4 threads once had too few batches of one to be compiled)
    for (const floorProcess of [plain, guaranteed, threaded, plain, guaranteed, threaded]) await pass(floorProcess);
    const meter = new Meter(
      [
        { name: "run-test floor", pid: plain.pid! },
        { name: "run-test floor with guarantees", pid: guaranteed.pid! },
        { name: "run-test floor with guarantees, in threads", pid: threaded.pid! },
        { name: "PostgreSQL", pid: ctx.stack.postmasterPid, tree: true },
        LOAD_GENERATOR,
      ],
      ctx.stack,
    );
    /** FLOOR_PASSES passes of a floor, each in a window of its own on the versions the product's read, pooled */
    const windowOf = async (floorProcess: ChildProcess, operation: string): Promise<Floored> => {
      const passes: Floored[] = [];
      for (let i = 0; i < FLOOR_PASSES; i++) {
        await ctx.pool.query(EARLIER_RESULTS);
        await meter.settle(ctx.pool); // what the product's push, the warm-ups and the other floors left
        let run = { evaluated: 0, written: 0, gcMs: 0 };
        const cost = await meter.window(operation, "thousand entities", async () => {
          run = await pass(floorProcess);
          return { units: run.evaluated / 1000 };
        });
        passes.push({ cost, written: run.written, gcMs: run.gcMs });
      }
      return {
        cost: pooled(passes.map((p) => p.cost)),
        written: passes.reduce((sum, p) => sum + p.written, 0),
        gcMs: passes.reduce((sum, p) => sum + p.gcMs, 0),
      };
    };
    const rounds: Goal[][] = [];
    const pushes: Cost[] = [];
    let last: { floor: Floored; withGuarantees: Floored; inThreads: Floored } | undefined;
    for (let round = 0; round < ROUNDS; round++) {
      await ctx.pool.query(EARLIER_RESULTS);
      const push = await ctx.push();
      const floor = await windowOf(plain, "floor: runTest, push");
      const withGuarantees = await windowOf(guaranteed, "floor with guarantees: runTest, push");
      const inThreads = await windowOf(threaded, "floor with guarantees, locks and merge, in threads: runTest, push");
      pushes.push(push);
      rounds.push(runTestGoals(push, floor.cost, withGuarantees.cost, inThreads.cost));
      printRunTestRound(round, push, floor, withGuarantees, inThreads);
      last = { floor, withGuarantees, inThreads };
    }
    printRunTestFloors(last!);
    return { goals: fromRounds(rounds), pushes };
  } finally {
    await Promise.all([stop(plain), stop(guaranteed), stop(threaded)]);
  }
}

/**
 * Passes of a floor per round, each in a window of its own, pooled (their CPU over their units). One pass is
 * about 0.2 s of its process's CPU, and whether a full collection of its heap (23-82 MB after a pass) fell in it moved
 * its CPU per thousand entities by half (9.5 against 14.5 ms, its main thread's collections 0.7 against 2.9 ms) from
 * one round to the next; two passes average over it. Each pass on the versions the product's window read
 * (EARLIER_RESULTS before each): a second pass in the same window would read the first's as well.
 */
const FLOOR_PASSES = 2;

/** Windows of one operation as one: per unit over all their units, their seconds added, the larger peak. */
function pooled(costs: readonly Cost[]): Cost {
  const units = costs.reduce((sum, c) => sum + c.units, 0);
  const seconds = costs.reduce((sum, c) => sum + c.seconds, 0);
  const perUnit = (of: (c: Cost) => number) => costs.reduce((sum, c) => sum + of(c) * c.units, 0) / units;
  const cpu: Record<string, number> = {};
  for (const name of Object.keys(costs[0]!.cpu)) cpu[name] = perUnit((c) => c.cpu[name] ?? 0);
  const peakMb: Record<string, number> = {};
  for (const c of costs)
    for (const [name, mb] of Object.entries(c.peakMb)) peakMb[name] = Math.max(peakMb[name] ?? 0, mb);
  return {
    ...costs[0]!,
    units,
    seconds,
    cpu,
    statements: perUnit((c) => c.statements),
    controlStatements: perUnit((c) => c.controlStatements),
    commands: perUnit((c) => c.commands),
    scriptCommands: perUnit((c) => c.scriptCommands),
    peakMb,
    othersCores: costs.reduce((sum, c) => sum + c.othersCores * c.seconds, 0) / seconds,
  };
}

/**
 * Every testResults version but each entity's latest of the product's (the floors' versions are below 0), deleted
 * before each window: without it every window reads one more version per entity than the last (the batch read's
 * DISTINCT ON sorts them all), and PostgreSQL's CPU per thousand entities grew round over round (23.5 to 42.5 ms for
 * the plain floor over 5 rounds), the product's and each floor's at a different point of that growth.
 */
const EARLIER_RESULTS = `
  DELETE FROM aspect a WHERE a.aspect_name = 'testResults'
     AND (a.version < 0 OR a.version < (SELECT max(b.version) FROM aspect b
                                         WHERE b.urn = a.urn AND b.aspect_name = 'testResults'))`;

/**
 * One round's CPU per thousand entities, the product's and each floor's, process and PostgreSQL: the goals give only
 * the rounds' ratios, and a round far from the others is read here (which window moved).
 */
function printRunTestRound(round: number, push: Cost, floor: Floored, withGuarantees: Floored, inThreads: Floored) {
  const ms = (s: number | undefined) => ((s ?? NaN) * 1e3).toFixed(1);
  const pair = (cost: Cost, process: string) => `${ms(cost.cpu[process])} / ${ms(cost.cpu.PostgreSQL)}`;
  const of = (run: Floored, process: string) =>
    `${pair(run.cost, process)} (main thread's GC ${(run.gcMs / run.cost.units).toFixed(1)})`;
  process.stdout.write(
    `runTest with push, round ${round + 1} of ${ROUNDS}, CPU ms per thousand entities (process / PostgreSQL): ` +
      `product ${pair(push, "evaluation worker")}; floor ${of(floor, "run-test floor")}; with guarantees ` +
      `${of(withGuarantees, "run-test floor with guarantees")}; in threads ${of(inThreads, THREADED_FLOOR)}\n`,
  );
}

/** A floor's window and the results it wrote. */
interface Floored {
  cost: Cost;
  written: number;
  /** milliseconds of the floor's main-thread garbage collection in its passes */
  gcMs: number;
}

/** The last round's floor windows, each with what it wrote (the rounds' ratios are in the goals). */
function printRunTestFloors({
  floor,
  withGuarantees,
  inThreads,
}: Record<"floor" | "withGuarantees" | "inThreads", Floored>) {
  const ms = (s: number | undefined) => `${((s ?? NaN) * 1e3).toFixed(1)} ms`;
  const line = (what: string, run: Floored, process: string, more = "") =>
    `\n${what}: ${(run.cost.units * 1000).toFixed(0)} entities in ${FLOOR_PASSES} passes (${run.written} results written) in ` +
    `${run.cost.seconds.toFixed(1)} s; CPU per thousand entities: process ${ms(run.cost.cpu[process])}, ` +
    `PostgreSQL ${ms(run.cost.cpu.PostgreSQL)}; PostgreSQL statements ${run.cost.statements.toFixed(2)} per ` +
    `thousand${more}\n`;
  const times = (a: number | undefined, b: number | undefined) => `${((a ?? NaN) / (b ?? NaN)).toFixed(2)}×`;
  process.stdout.write(
    `\nThe floors of runTest with push, the last of ${ROUNDS} rounds:\n` +
      line(
        `floor of runTest with push (batches of ${DEFAULT_RUN_BATCH_SIZE} read, evaluated in process, one INSERT of ` +
          `testResults per batch)`,
        floor,
        "run-test floor",
      ) +
      line(
        "floor with its guarantees (the same, and in each batch's transaction each version's MetadataChangeLog_v1 " +
          "event in the INSERT, one statement of history with its flip events, one of the run diff; then the " +
          "sequencer's numbering of the batch's events)",
        withGuarantees,
        "run-test floor with guarantees",
        `; ÷ the plain floor: process ${times(
          withGuarantees.cost.cpu["run-test floor with guarantees"],
          floor.cost.cpu["run-test floor"],
        )}, PostgreSQL ${times(withGuarantees.cost.cpu.PostgreSQL, floor.cost.cpu.PostgreSQL)}`,
      ) +
      line(
        "floor with its guarantees, locks and merge, in threads (each batch's locks taken before it is read with its " +
          "stored results, evaluated and merged onto them in a piscina pool as the evaluation worker's)",
        inThreads,
        "run-test floor with guarantees, in threads",
        `; its process ÷ the plain floor's ${times(
          inThreads.cost.cpu["run-test floor with guarantees, in threads"],
          floor.cost.cpu["run-test floor"],
        )}`,
      ),
  );
}

/** One round's goals of runTest with push: against the plain floor, and the guarantees floors as references. */
function runTestGoals(push: Cost, floor: Cost, withGuarantees: Cost, inThreads: Cost): Goal[] {
  const bare = "bare process: batch read, in-process evaluation, one INSERT";
  const worker = goalOf(push, "evaluation worker", floor, "run-test floor", bare, LIMIT);
  const postgres = goalOf(push, "PostgreSQL", floor, "PostgreSQL", "the bare process's statements", LIMIT);
  return [
    worker,
    postgres,
    asReference(
      goalOf(
        push,
        "evaluation worker",
        withGuarantees,
        "run-test floor with guarantees",
        "the bare process with events, history, run diff, numbering",
        LIMIT,
      ),
    ),
    asReference(goalOf(push, "PostgreSQL", withGuarantees, "PostgreSQL", "the guarantees floor's statements", LIMIT)),
    asReference(
      goalOf(
        push,
        "evaluation worker",
        inThreads,
        "run-test floor with guarantees, in threads",
        "the same in threads, with the locks and the merge onto stored results",
        LIMIT,
      ),
    ),
    asKept(goalOf(inThreads, THREADED_FLOOR, floor, "run-test floor", bare, LIMIT), worker),
    asKept(goalOf(withGuarantees, "PostgreSQL", floor, "PostgreSQL", "the bare process's statements", LIMIT), postgres),
  ];
}
