/**
 * `promise`, or, when `ms` pass first, the error `late()` makes (by default "timed out after <ms> ms"); its timer is
 * cleared either way, so a call that answers in time leaves nothing behind. The work itself goes on: a caller that
 * must take it back (an enqueue) or stop it does so on the error. The one timeout race of the services and libs.
 */
export function withTimeout<T>(
  promise: Promise<T>,
  ms: number,
  late: () => Error = () => new Error(`timed out after ${ms} ms`),
): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(late()), ms);
  });
  return Promise.race([promise, timedOut]).finally(() => clearTimeout(timer));
}
