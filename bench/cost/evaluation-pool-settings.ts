/**
 * The evaluation worker's pool, as bench/cost's threaded floors copy it (config-runtime.ts' defaults, evaluation-pool.ts'
 * constants; keep them in step): its threads, all started at once and kept, each with the heap limits and young
 * generation of the product's threads, each task abortable at the time limit.
 */
import v8 from "node:v8";
import { Piscina } from "piscina";

export const THREADS = 4; // EVALUATION_THREADS
export const MEMORY_LIMIT_MB = 128; // EVALUATION_MEMORY_LIMIT_MB
export const TIME_LIMIT_MS = 10_000; // EVALUATION_TIME_LIMIT_MS
export const YOUNG_GENERATION_MB = 16;

/** A pool of `filename`'s threads set up as the product's; run(task) runs one task under the time limit. */
export function productLikePool<Task, Result>(filename: string, workerData: unknown, maxQueue: number) {
  v8.setFlagsFromString(`--min-semi-space-size=${Math.floor(YOUNG_GENERATION_MB / 3)}`);
  const pool = new Piscina<Task, Result>({
    filename,
    minThreads: THREADS,
    maxThreads: THREADS,
    idleTimeout: Number.MAX_SAFE_INTEGER,
    maxQueue,
    resourceLimits: { maxOldGenerationSizeMb: MEMORY_LIMIT_MB, maxYoungGenerationSizeMb: YOUNG_GENERATION_MB },
    workerData,
  });
  return {
    pool,
    async run(task: Task): Promise<Result> {
      const abort = new AbortController();
      const timer = setTimeout(() => abort.abort(), TIME_LIMIT_MS);
      try {
        return await pool.run(task, { signal: abort.signal });
      } finally {
        clearTimeout(timer);
      }
    },
  };
}
