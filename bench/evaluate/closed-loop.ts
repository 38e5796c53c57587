import { performance } from "node:perf_hooks";

export interface LoopResult {
  perSecond: number;
  p50Ms: number;
  p99Ms: number;
  requests: number;
}

/**
 * `concurrency` callers, each issuing its next call as soon as the previous one answers, for `seconds`. Latency is
 * measured by the caller (performance.now, sub-millisecond), the same way for every target, so ratios compare like
 * with like. A failed call fails the run: a benchmark must not time failures.
 */
export async function closedLoop(concurrency: number, seconds: number, call: () => Promise<void>): Promise<LoopResult> {
  const latencies: number[] = [];
  const started = performance.now();
  const end = started + seconds * 1000;
  const caller = async () => {
    while (performance.now() < end) {
      const t0 = performance.now();
      await call();
      latencies.push(performance.now() - t0);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, caller));
  const elapsed = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  return {
    perSecond: latencies.length / elapsed,
    p50Ms: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99),
    requests: latencies.length,
  };
}

export function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
}

export const median = (xs: readonly number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
