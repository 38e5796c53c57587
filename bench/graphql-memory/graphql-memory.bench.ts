/**
 * bench/graphql-memory: the gateway's resident memory while callers put their values into the query text, so that
 * every request is a document it has never seen (once 250 MB to ~950 MB RSS in 3 minutes, when the
 * parsed-document cache was bounded by count). Budget: the gateway stays under 400 MB RSS through 3 minutes of it.
 *
 * Two phases, each on a fresh gateway process started as the other benchmarks start it (production mode, secrets of
 * the run, the services' node flags) on the same database, driven by the same closed loop of 16 callers from
 * 127.0.0.1 for BENCH_GRAPHQL_MEMORY_SECONDS (180) each:
 * - the floor: ONE document, repeated, its values in variables (documents.ts, repeatedDocumentBody);
 * - the target: a new 1–5 KB document per request, its values inlined (documents.ts, uniqueTextBody).
 * The gateway's RSS is read from /proc/<pid>/status every second (VmRSS; VmHWM for a peak between samples). The
 * figure is the ratio of the two peaks, beside the absolute peak against 400 MB. Exits non-zero when the peak passes
 * the budget, when any answer is 5xx or a connection fails.
 */
import { readFileSync } from "node:fs";
import http from "node:http";
import { performance } from "node:perf_hooks";
import { createTestDatabase } from "@mdp/db/testing";
import { freePort, startService, uniqueName, waitUntilReady } from "../../test/support/services";
import { productionSetup } from "../support/production";
import { printReport } from "../support/report";
import { repeatedDocumentBody, uniqueTextBody } from "./documents";

const SECONDS = Number(process.env.BENCH_GRAPHQL_MEMORY_SECONDS ?? 180);
const CONCURRENCY = 16;
/** A bound on count as well as on time, whatever the machine's speed. */
const MAX_REQUESTS_PER_PHASE = 2_000_000;
const BUDGET_MB = 400;
const ROOT = "urn:li:corpuser:admin";
/** How often the growth pattern is printed: 12 points a phase, at most every 5 s. */
const PROGRESS_EVERY_SECONDS = Math.max(5, Math.round(SECONDS / 12));

interface Phase {
  label: string;
  requests: number;
  seconds: number;
  /** answers by HTTP status; "200 errors" is a 200 carrying GraphQL errors */
  answers: Map<string, number>;
  connectionErrors: number;
  meanDocumentBytes: number;
  idleMb: number;
  /** highest VmRSS sampled under load, and the kernel's high-water mark (VmHWM) at the end */
  peakMb: number;
  finalMb: number;
  /** RSS, heap used and requests at each progress point: the growth pattern */
  timeline: Array<{ second: number; rssMb: number; heap: Heap | undefined; requests: number }>;
}

const mb = (kb: number) => kb / 1024;

function memoryOf(pid: number): { rssMb: number; hwmMb: number } {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const field = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, "m").exec(status)?.[1] ?? NaN);
  return { rssMb: mb(field("VmRSS")), hwmMb: mb(field("VmHWM")) };
}

/** MB of the gateway's V8 heap: in use, reserved (all spaces), its new space reserved, and memory outside it. */
interface Heap {
  used: number;
  total: number;
  newSpace: number;
  external: number;
}

/** The gateway's heap, from its Prometheus metrics (prom-client's default nodejs_* gauges). */
async function heapOf(baseUrl: string): Promise<Heap | undefined> {
  try {
    const text = await (await fetch(`${baseUrl}/metrics`)).text();
    const gauge = (name: string) =>
      Number(new RegExp(`^${name} (\\d+(?:\\.\\d+)?)`, "m").exec(text)?.[1] ?? NaN) / 2 ** 20;
    return {
      used: gauge("nodejs_heap_size_used_bytes"),
      total: gauge("nodejs_heap_size_total_bytes"),
      newSpace: gauge(`nodejs_heap_space_size_total_bytes\\{space="new"\\}`),
      external: gauge("nodejs_external_memory_bytes"),
    };
  } catch {
    return undefined;
  }
}

function post(
  agent: http.Agent,
  port: number,
  headers: Record<string, string>,
  body: string,
): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: "127.0.0.1", port, path: "/api/graphql", method: "POST", agent, headers },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (chunk: Buffer) => chunks.push(chunk));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString() }));
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

async function runPhase(
  label: string,
  makeBody: () => { body: string; documentBytes: number },
  env: Record<string, string>,
  headers: Record<string, string>,
): Promise<Phase> {
  const port = await freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  const gateway = startService("gateway", { ...env, PORT: String(port), LOG_LEVEL: "warn" });
  const agent = new http.Agent({ keepAlive: true, maxSockets: CONCURRENCY });
  try {
    await waitUntilReady(baseUrl, gateway);
    const pid = gateway.process.pid!;
    // One request first: a document the gateway refuses would make the whole run measure refusals.
    const probe = await post(agent, port, headers, makeBody().body);
    if (probe.status !== 200 || probe.text.includes('"errors"'))
      throw new Error(`${label}: the first request answered ${probe.status} ${probe.text.slice(0, 500)}`);
    const phase: Phase = {
      label,
      requests: 0,
      seconds: 0,
      answers: new Map(),
      connectionErrors: 0,
      meanDocumentBytes: 0,
      idleMb: memoryOf(pid).rssMb,
      peakMb: 0,
      finalMb: 0,
      timeline: [],
    };
    let documentBytes = 0;
    const started = performance.now();
    const end = started + SECONDS * 1000;
    const sampler = setInterval(() => {
      const { rssMb } = memoryOf(pid);
      phase.peakMb = Math.max(phase.peakMb, rssMb);
      const second = Math.round((performance.now() - started) / 1000);
      if (second > 0 && second % PROGRESS_EVERY_SECONDS === 0) {
        const requests = phase.requests;
        void heapOf(baseUrl).then((heap) => {
          phase.timeline.push({ second, rssMb, heap, requests });
          const heapText = heap
            ? `heap used ${heap.used.toFixed(0)} of ${heap.total.toFixed(0)} MB (new space ${heap.newSpace.toFixed(0)}), ` +
              `external ${heap.external.toFixed(0)} MB`
            : "heap ?";
          process.stdout.write(
            `  ${label}: ${String(second).padStart(4)} s  RSS ${rssMb.toFixed(0).padStart(4)} MB  ${heapText}  ` +
              `${requests} requests\n`,
          );
        });
      }
    }, 1000);
    const caller = async () => {
      while (performance.now() < end && phase.requests < MAX_REQUESTS_PER_PHASE) {
        const { body, documentBytes: bytes } = makeBody();
        phase.requests++;
        documentBytes += bytes;
        try {
          const { status, text } = await post(agent, port, headers, body);
          const key = status === 200 && text.includes('"errors"') ? "200 errors" : String(status);
          phase.answers.set(key, (phase.answers.get(key) ?? 0) + 1);
        } catch {
          phase.connectionErrors++;
        }
      }
    };
    try {
      await Promise.all(Array.from({ length: CONCURRENCY }, caller));
    } finally {
      clearInterval(sampler);
    }
    phase.seconds = (performance.now() - started) / 1000;
    phase.meanDocumentBytes = documentBytes / Math.max(1, phase.requests);
    const last = memoryOf(pid);
    phase.finalMb = last.rssMb;
    phase.peakMb = Math.max(phase.peakMb, last.rssMb, last.hwmMb);
    const said = gateway.output().trim();
    if (said) process.stdout.write(`  ${label}: the gateway printed ${said.length} chars: ${said.slice(0, 400)}\n`);
    return phase;
  } finally {
    agent.destroy();
    await gateway.stop();
  }
}

export async function benchGraphqlMemory(): Promise<void> {
  const db = await createTestDatabase("bench_graphql_memory");
  const production = productionSetup();
  const env = {
    ...production.env,
    DATABASE_URL: db.url,
    REDIS_URL: process.env.REDIS_URL ?? "redis://127.0.0.1:6379",
    QUEUE_PREFIX: uniqueName("bench-graphql-memory"),
  };
  // The system client acting for root: listAccessTokens of any actor, no rate limit, no token cache in the way.
  const headers = { ...production.systemClient(ROOT), "content-type": "application/json" };
  try {
    process.stdout.write(
      `\nbench/graphql-memory: ${CONCURRENCY} callers, ${SECONDS} s per phase, RSS of the gateway process every second\n`,
    );
    const floor = await runPhase("one repeated document", repeatedDocumentBody, env, headers);
    const unique = await runPhase("unique query texts", uniqueTextBody, env, headers);

    const rate = (p: Phase) => p.requests / p.seconds;
    const describe = (p: Phase) =>
      `peak ${p.peakMb.toFixed(0)} MB, final ${p.finalMb.toFixed(0)} MB (idle ${p.idleMb.toFixed(0)} MB)`;
    printReport(
      "bench/graphql-memory",
      `one repeated document, values in variables: ${describe(floor)}, ${rate(floor).toFixed(0)} req/s`,
      [
        {
          name: "peak RSS, unique query texts",
          value: `${unique.peakMb.toFixed(0)} MB`,
          ratio: unique.peakMb / floor.peakMb,
          target: `<=${BUDGET_MB} MB`,
          met: unique.peakMb <= BUDGET_MB,
        },
        {
          name: "final RSS, unique query texts",
          value: `${unique.finalMb.toFixed(0)} MB`,
          ratio: unique.finalMb / floor.finalMb,
          target: "-",
          met: true,
        },
        {
          name: "throughput, unique query texts",
          value: `${rate(unique).toFixed(0)} req/s`,
          ratio: rate(unique) / rate(floor),
          target: "-",
          met: true,
        },
      ],
    );
    let failed = unique.peakMb > BUDGET_MB;
    for (const p of [floor, unique]) {
      const answers = [...p.answers].sort(([a], [b]) => a.localeCompare(b)).map(([k, n]) => `${k}: ${n}`);
      const fivexx = [...p.answers].filter(([k]) => k.startsWith("5")).reduce((sum, [, n]) => sum + n, 0);
      if (fivexx > 0 || p.connectionErrors > 0) failed = true;
      process.stdout.write(
        `  ${p.label}: ${p.requests} requests in ${p.seconds.toFixed(0)} s (${rate(p).toFixed(0)} req/s), ` +
          `query text ${p.meanDocumentBytes.toFixed(0)} B on average; answers ${answers.join(", ")}` +
          `${p.connectionErrors > 0 ? `, ${p.connectionErrors} connection errors` : ""}; ${describe(p)}\n`,
      );
    }
    if (failed) {
      process.stdout.write(`  FAILED: peak over ${BUDGET_MB} MB, a 5xx answer or a failed connection (see above)\n`);
      process.exitCode = 1;
    }
  } finally {
    await db.drop();
  }
}
