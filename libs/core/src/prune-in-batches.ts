export interface PruneInBatchesOptions {
  /** how long one run may go on (ms): once spent, what is left waits for the next run */
  budgetMs: number;
  /** rows one statement takes at most: short statements, so writers of the same table never wait long on one */
  batch: number;
}

/**
 * A chore's bounded statements (a retention's deletes, or any work it does `batch` rows at a time): `fn(batch)` again
 * and again until a statement takes fewer than `batch` rows (caught up) or `budgetMs` is spent; answers the rows they
 * took. A time budget rather than a count of statements: a fixed count let a table written faster than it was pruned
 * grow for good. The first statement always runs. A statement that throws ends the run with its error, so the chore's
 * firing fails (and says so) rather than reporting nothing done; what the earlier statements did stays done.
 */
export async function pruneInBatches(
  fn: (batch: number) => Promise<number>,
  { budgetMs, batch }: PruneInBatchesOptions,
): Promise<number> {
  const until = Date.now() + budgetMs;
  let done = 0;
  for (;;) {
    const n = await fn(batch);
    done += n;
    if (n < batch || Date.now() >= until) return done;
  }
}
