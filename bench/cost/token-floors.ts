/**
 * bench/cost's floors of the token operations, measured in rounds with the gateway's windows (each round the gateway's
 * window, then its floors'), on the same private PostgreSQL, with the same connections, and compared with them as
 * goals (goals.ts):
 * - me: a bare Apollo serving the gateway's schema (../support/token-floor-server.ts, its own process, as the gateway)
 *   answering the same query from memory, no authentication; the gateway's CPU per request ≤ 1.5× its.
 * - listAccessTokens: that server answering the same 100 tokens from memory (gateway ≤ 2×); and the gateway's list
 *   statement (token-floor-statements.ts) run bare by a pg client in this process at the same concurrency, for
 *   PostgreSQL's CPU per call (PostgreSQL ≤ 1.5×: what the gateway runs beside it, an authentication lookup or usage
 *   recording, is what the ratio shows).
 * - createAccessToken: that server running the gateway's create statement; gateway ≤ 1.5×, PostgreSQL ≤ 1.5×.
 * And for each, as references (not goals), the same server behind the protections every gateway request pays, done as
 * their libraries document them (../support/floor-protections.ts: tracing, security headers, metrics, request ids,
 * authentication): the gateway against it, and it against the bare floor (a kept floor: goals.ts asKept).
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import pg from "pg";
import { freePort } from "../../test/support/services";
import { spawnBenchProcess } from "../support/bench-process";
import { gatewaySchema } from "../support/gateway-schema";
import { listTokens } from "../support/token-floor-statements";
import { asKept, asReference, fromRounds, goalOf, medianCost, ROUNDS, type Goal } from "./goals";
import { cannon, Meter, type Cost, type LoadTarget } from "./meter";
import type { PrivateStack } from "./private-stack";

export const TOKEN_OPERATIONS = ["me", "list", "create"] as const;
export type TokenOperation = (typeof TOKEN_OPERATIONS)[number];

export interface TokenFloorsContext {
  stack: PrivateStack;
  /** a system client's headers: the gateway's schema, by introspection, for the floor to serve */
  systemHeaders: Record<string, string>;
  /** the requests of the gateway's windows (to its GraphQL endpoint): the floor server is sent the same */
  requests: Record<TokenOperation, LoadTarget>;
  /** whose 10,000 tokens the list reads; whom `me` answers */
  listActorUrn: string;
  meUrn: string;
  connections: number;
  seconds: number;
  warmUpSeconds: number;
}

const FLOOR = "bare Apollo floor";
const PROTECTED = "protected floor";
const PROTECTED_WHAT = "bare Apollo behind the libraries' protections";

/**
 * Each operation given (any of me, list, create) measured in ROUNDS rounds against its floors, each round the
 * operation's window (`operations[op]`, the gateway's) and then its floors' windows, and their goals from the rounds
 * (goals.ts); with each operation's median window for the cost table. Starts the floor server and stops it after.
 */
export async function tokenFloorGoals(
  ctx: TokenFloorsContext,
  operations: Partial<Record<TokenOperation, () => Promise<Cost>>>,
): Promise<{ goals: Goal[]; costs: Partial<Record<TokenOperation, Cost>> }> {
  const measured = TOKEN_OPERATIONS.filter((op) => operations[op]);
  if (measured.length === 0) return { goals: [], costs: {} };
  const dir = mkdtempSync(path.join(tmpdir(), "bench-cost-floor-"));
  const schemaFile = path.join(dir, "schema.graphql");
  writeFileSync(schemaFile, await gatewaySchema(ctx.requests.me.url, ctx.systemHeaders));
  const port = await freePort();
  let protectedPort = await freePort();
  while (protectedPort === port) protectedPort = await freePort();
  const serverEnv = {
    DATABASE_URL: ctx.stack.databaseUrl,
    LIST_ACTOR_URN: ctx.listActorUrn,
    ME_URN: ctx.meUrn,
    SCHEMA_FILE: schemaFile,
  };
  const serverFile = path.join(__dirname, "../support/token-floor-server.ts");
  const server = spawnBenchProcess(serverFile, { ...serverEnv, PORT: String(port) });
  const bearer = String(ctx.requests.me.headers?.authorization ?? "").replace(/^Bearer /, "");
  const guarded = spawnBenchProcess(serverFile, {
    ...serverEnv,
    PORT: String(protectedPort),
    FLOOR_PROTECTIONS: "1",
    FLOOR_BEARER: bearer,
  });
  const pool = new pg.Pool({ connectionString: ctx.stack.databaseUrl, max: ctx.connections });
  try {
    for (const started of [server, guarded]) {
      await new Promise((resolve, reject) => {
        started.stdout!.once("data", resolve);
        started.once("exit", (code) => reject(new Error(`the token floor server exited (${code})`)));
      });
    }
    const floorOf = (op: TokenOperation): LoadTarget => ({
      ...ctx.requests[op],
      url: `http://127.0.0.1:${port}/api/graphql`,
    });
    const guardedOf = (op: TokenOperation): LoadTarget => ({
      ...ctx.requests[op],
      url: `http://127.0.0.1:${protectedPort}/api/graphql`,
    });
    // Apollo answers a resolver's error with 200: each floor's answer is checked once, so none is timed failing.
    for (const op of measured) await answered(floorOf(op));
    for (const op of measured) await cannon([floorOf(op)], ctx.connections, ctx.warmUpSeconds);
    for (const op of measured) await answered(guardedOf(op));
    for (const op of measured) await cannon([guardedOf(op)], ctx.connections, ctx.warmUpSeconds);
    const listSql = () => listCalls(pool, ctx.listActorUrn, ctx.connections, ctx.seconds);
    if (measured.includes("list")) await listCalls(pool, ctx.listActorUrn, ctx.connections, ctx.warmUpSeconds);

    const meter = new Meter(
      [
        { name: FLOOR, pid: server.pid! },
        { name: PROTECTED, pid: guarded.pid! },
        { name: "PostgreSQL", pid: ctx.stack.postmasterPid, tree: true },
        { name: "load generator", pid: process.pid },
      ],
      ctx.stack,
    );
    /** a floor window, after what the windows before it left is settled (as before the gateway's) */
    const settled = async (operation: string, unit: string, drive: () => Promise<{ units: number }>) => {
      await meter.settle(pool);
      return report(await meter.window(operation, unit, drive));
    };
    const http = (op: TokenOperation, what: string) =>
      settled(`floor of ${op}: ${what}`, "request", async () => ({
        units: await cannon([floorOf(op)], ctx.connections, ctx.seconds),
      }));
    /**
     * `op`'s goal of the gateway against `floor`, then its kept floor (the same server behind the protections) as a
     * reference against the gateway and against `floor`
     */
    const withKept = async (op: TokenOperation, cost: Cost, floor: Cost, what: string, limit: number) => {
      const guardedFloor = await settled(`floor of ${op}: ${PROTECTED_WHAT}`, "request", async () => ({
        units: await cannon([guardedOf(op)], ctx.connections, ctx.seconds),
      }));
      const goal = goalOf(cost, "gateway", floor, FLOOR, what, limit);
      return [
        goal,
        asReference(goalOf(cost, "gateway", guardedFloor, PROTECTED, PROTECTED_WHAT, limit)),
        asKept(goalOf(guardedFloor, PROTECTED, floor, FLOOR, what, limit), goal),
      ];
    };
    /** one round's goals of `op`: its window, then its floors' */
    const round: Record<TokenOperation, (cost: Cost) => Promise<Goal[]>> = {
      me: async (me) =>
        withKept("me", me, await http("me", "bare Apollo, from memory"), "bare Apollo, from memory", 1.5),
      list: async (list) => {
        const what = "bare Apollo, 100 tokens from memory";
        const floor = await http("list", what);
        const sql = await settled("floor of list: its SQL, a bare pg client", "call", listSql);
        return [
          ...(await withKept("list", list, floor, what, 2)),
          goalOf(list, "PostgreSQL", sql, "PostgreSQL", "its SQL, a bare pg client", 1.5),
        ];
      },
      create: async (create) => {
        const what = "the same INSERT, bare Apollo";
        const floor = await http("create", what);
        return [
          ...(await withKept("create", create, floor, what, 1.5)),
          goalOf(create, "PostgreSQL", floor, "PostgreSQL", what, 1.5),
        ];
      },
    };
    const goals: Goal[] = [];
    const costs: Partial<Record<TokenOperation, Cost>> = {};
    for (const op of measured) {
      const rounds: Goal[][] = [];
      const windows: Cost[] = [];
      for (let r = 0; r < ROUNDS; r++) {
        const cost = await operations[op]!();
        windows.push(cost);
        rounds.push(await round[op](cost));
      }
      goals.push(...fromRounds(rounds));
      costs[op] = medianCost(windows, "gateway");
    }
    return { goals, costs };
  } finally {
    server.kill("SIGTERM");
    guarded.kill("SIGTERM");
    await pool.end();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** One request to `target`, which must answer data and no errors. */
async function answered(target: LoadTarget): Promise<void> {
  const res = await fetch(target.url, { method: "POST", headers: target.headers, body: target.body });
  const body = (await res.json()) as { data?: unknown; errors?: unknown };
  if (!res.ok || body.errors || !body.data) throw new Error(`${target.url}: ${res.status} ${JSON.stringify(body)}`);
}

/** The list statement run by `connections` callers at once for `seconds`; how many calls it answered. */
async function listCalls(pool: pg.Pool, actorUrn: string, connections: number, seconds: number) {
  const end = performance.now() + seconds * 1000;
  let units = 0;
  await Promise.all(
    Array.from({ length: connections }, async () => {
      while (performance.now() < end) {
        const rows = await listTokens(pool, actorUrn, new Date(), 0, 100);
        if (rows.length !== 100) throw new Error(`the list floor's statement read ${rows.length} tokens, not 100`);
        units++;
      }
    }),
  );
  return { units };
}

/** A floor's window in one line: its rate, its process's and PostgreSQL's CPU, its statements per unit. */
function report(cost: Cost): Cost {
  const served = (cost.cpu[PROTECTED] ?? 0) > (cost.cpu[FLOOR] ?? 0) ? PROTECTED : FLOOR;
  const us = (name: string) => `${((cost.cpu[name] ?? 0) * 1e6).toFixed(0)} µs`;
  process.stdout.write(
    `\n${cost.operation}: ${(cost.units / cost.seconds).toFixed(0)} per s (load average ${cost.load}); CPU per ` +
      `${cost.unit}: ${served} ${us(served)}, PostgreSQL ${us("PostgreSQL")}, load generator ${us("load generator")}; ` +
      `PostgreSQL statements per ${cost.unit}: ${cost.statements.toFixed(2)}\n`,
  );
  return cost;
}
