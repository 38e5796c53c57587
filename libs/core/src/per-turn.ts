/**
 * Collects the values given in one turn of the event loop and runs `run` once on them at its end (setImmediate), each
 * caller getting the result at its value's index, or `run`'s error: under load, concurrent callers share one round
 * trip; a lone caller waits for nothing but the end of its turn. With `keyOf`, values of different keys never share a
 * batch: each key's values are one run of their own (in the order their keys first came), failing on their own.
 * The one per-turn batcher of the services and libs.
 */
export function perTurn<T, R>(
  run: (batch: T[]) => Promise<R[]>,
  keyOf: (value: T) => string = () => "",
): (value: T) => Promise<R> {
  let pending = new Map<string, Array<{ value: T; resolve: (result: R) => void; reject: (error: unknown) => void }>>();
  return (value) =>
    new Promise<R>((resolve, reject) => {
      if (pending.size === 0) {
        setImmediate(() => {
          const batches = pending;
          pending = new Map();
          for (const batch of batches.values()) {
            // Run now, in the order the keys came; one that throws rather than rejecting fails its batch alike.
            new Promise<R[]>((ran) => ran(run(batch.map((b) => b.value)))).then(
              (results) => batch.forEach((b, i) => b.resolve(results[i]!)),
              (error: unknown) => batch.forEach((b) => b.reject(error)),
            );
          }
        });
      }
      const key = keyOf(value);
      const batch = pending.get(key);
      if (batch) batch.push({ value, resolve, reject });
      else pending.set(key, [{ value, resolve, reject }]);
    });
}
