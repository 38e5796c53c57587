/** What bench/webhooks' parts share: the receiver, the ingest, the calm stream's pace, percentiles. */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { performance } from "node:perf_hooks";
import type { ApiClient } from "../evaluate/evaluate.bench";

export const ADMIN = "urn:li:corpuser:admin";
export const BATCH = 100;
export const CALM_RATE = 100;

export interface Receiver {
  url: string;
  count: number;
  lastAt: number;
  /** when set, each body's `createdAt` (epoch ms) is read and the time since it recorded here */
  latencies?: number[];
  /** with `latencies`: each POST's arrival (epoch ms), in the same order */
  arrivals?: number[];
  close(): Promise<void>;
}

export async function startReceiver(): Promise<Receiver> {
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => receiver.latencies && chunks.push(chunk));
    req.on("end", () => {
      if (receiver.latencies) {
        const { createdAt } = JSON.parse(Buffer.concat(chunks).toString()) as { createdAt: number };
        receiver.latencies.push(Date.now() - createdAt);
        receiver.arrivals?.push(Date.now());
      }
      receiver.count++;
      receiver.lastAt = performance.now();
      res.writeHead(204).end();
    });
  });
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const receiver: Receiver = {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    count: 0,
    lastAt: 0,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  return receiver;
}

export const until = async (what: string, check: () => boolean, timeoutMs: number) => {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 10));
  }
};

export const proposals = (prefix: string, from: number, n: number) =>
  Array.from({ length: n }, (_, i) => ({
    entityType: "dataset",
    entityUrn: `urn:li:dataset:(urn:li:dataPlatform:hive,db.${prefix}_${from + i},PROD)`,
    aspectName: "datasetProperties",
    changeType: "UPSERT",
    aspect: { contentType: "application/json", value: JSON.stringify({ description: `d${from + i}` }) },
  }));

export async function ingest(api: ApiClient, prefix: string, total: number): Promise<number> {
  const started = performance.now();
  for (let i = 0; i < total; i += BATCH) {
    await api.post("/gms/aspects?action=ingestProposalBatch", { proposals: proposals(prefix, i, BATCH) });
  }
  return performance.now() - started;
}

export const percentile = (xs: number[], q: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * q))] ?? NaN;

/** `send(first, n)` for `total` items at CALM_RATE a second, in tenths of a second; the sends overlap if they lag. */
export async function paced(total: number, send: (first: number, n: number) => Promise<unknown>): Promise<void> {
  const perTick = CALM_RATE / 10;
  const started = performance.now();
  const sent: Array<Promise<unknown>> = [];
  for (let i = 0; i < total; i += perTick) {
    const due = started + (i / perTick) * 100;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    sent.push(send(i, Math.min(perTick, total - i)));
  }
  await Promise.all(sent);
}
