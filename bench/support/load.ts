import autocannon from "autocannon";

export interface LoadTarget {
  url: string;
  method?: "GET" | "POST";
  headers?: Record<string, string>;
  body?: string;
}

export interface LoadResult {
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  errors: number;
}

/** One bounded autocannon run against 127.0.0.1. Non-2xx answers count as errors: a benchmark must not time failures. */
async function once(target: LoadTarget, connections: number, seconds: number): Promise<LoadResult> {
  const result = await autocannon({
    url: target.url,
    method: target.method ?? "POST",
    headers: { "content-type": "application/json", ...target.headers },
    body: target.body,
    connections,
    duration: seconds,
  });
  return {
    requestsPerSecond: result.requests.average,
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    errors: result.errors + result.non2xx,
  };
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

/** Warm-up, then `rounds` runs; the median of each figure (this machine is noisy). */
export async function measure(
  target: LoadTarget,
  { connections = 10, seconds = 4, rounds = 3 } = {},
): Promise<LoadResult> {
  await once(target, connections, 1);
  const runs: LoadResult[] = [];
  for (let i = 0; i < rounds; i++) runs.push(await once(target, connections, seconds));
  const errors = runs.reduce((sum, r) => sum + r.errors, 0);
  if (errors > 0) throw new Error(`${target.url}: ${errors} requests failed during the benchmark`);
  return {
    requestsPerSecond: median(runs.map((r) => r.requestsPerSecond)),
    p50Ms: median(runs.map((r) => r.p50Ms)),
    p99Ms: median(runs.map((r) => r.p99Ms)),
    errors,
  };
}
