/**
 * For tests only (`@mdp/core/testing`): waiting for a condition instead of sleeping for a guess of how long it takes.
 */

/** How often `eventually` asks again: short, so a test ends as soon as what it waits for holds. */
const POLL_MS = 20;

/**
 * Resolves to `check`'s first answer that `until` accepts (default: any answer that is not undefined, null or false),
 * asking every 20 ms; throws, naming `what` and the last answer (or error), once `timeoutMs` has passed without one.
 * A `check` that throws is asked again: a condition not yet true may well fail to read (a row not yet written).
 */
export async function eventually<T>(
  what: string,
  check: () => T | Promise<T>,
  { timeoutMs = 10_000, until = (value: T) => value !== undefined && value !== null && value !== false } = {},
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await check();
      if (until(value)) return value;
      last = value;
    } catch (error) {
      last = error;
    }
    if (Date.now() >= deadline) {
      const shown = last instanceof Error ? last.message : JSON.stringify(last);
      throw new Error(`${what}: not so within ${timeoutMs} ms (last seen: ${shown?.slice(0, 500)})`);
    }
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}
