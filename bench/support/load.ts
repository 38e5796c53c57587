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

export interface LoadOptions {
  connections?: number;
  /** length of one run */
  seconds?: number;
  rounds?: number;
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

export const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

/** What one target did: every round's run, and their medians. */
export interface Measured extends LoadResult {
  runs: LoadResult[];
}

/**
 * Warm-up, then `rounds` rounds in which every target runs once, in an order rotated each round. Interleaving means
 * slow drift on this shared, noisy machine (other processes, autovacuum, a growing table) reaches every target alike,
 * and `ratio` can pair runs of the same round instead of comparing measurements made a minute apart.
 */
export async function measureInterleaved<K extends string>(
  targets: Record<K, LoadTarget>,
  { connections = 10, seconds = 3, rounds = 5 }: LoadOptions = {},
): Promise<Record<K, Measured>> {
  const names = Object.keys(targets) as K[];
  for (const name of names) await once(targets[name], connections, 1);
  const runs = Object.fromEntries(names.map((n) => [n, [] as LoadResult[]])) as Record<K, LoadResult[]>;
  for (let round = 0; round < rounds; round++) {
    for (let i = 0; i < names.length; i++) {
      const name = names[(i + round) % names.length]!;
      runs[name].push(await once(targets[name], connections, seconds));
    }
  }
  const measured = {} as Record<K, Measured>;
  for (const name of names) {
    const errors = runs[name].reduce((sum, r) => sum + r.errors, 0);
    if (errors > 0) throw new Error(`${targets[name].url} (${name}): ${errors} requests failed during the benchmark`);
    measured[name] = {
      requestsPerSecond: median(runs[name].map((r) => r.requestsPerSecond)),
      p50Ms: median(runs[name].map((r) => r.p50Ms)),
      p99Ms: median(runs[name].map((r) => r.p99Ms)),
      errors,
      runs: runs[name],
    };
  }
  return measured;
}

/** Warm-up, then `rounds` runs of one target; the median of each figure. */
export async function measure(target: LoadTarget, options: LoadOptions = {}): Promise<Measured> {
  return (await measureInterleaved({ target }, { seconds: 4, rounds: 3, ...options })).target;
}

/** The median over rounds of a/b, each round's runs paired; plus the lowest and highest of those ratios. */
export function ratio(a: Measured, b: Measured): { median: number; min: number; max: number } {
  const ratios = a.runs.map((run, i) => run.requestsPerSecond / b.runs[i]!.requestsPerSecond);
  return { median: median(ratios), min: Math.min(...ratios), max: Math.max(...ratios) };
}
