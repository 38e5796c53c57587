import { usageError } from "./exit-codes";

const UNIT_MS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 7 * 86_400_000 };

export const INSTANT_HELP =
  "epoch milliseconds (1700000000000), an ISO date or instant (2024-01-31, 2024-01-31T12:00:00Z), " +
  "or an age before now (90d, 12h, 30m, 2w, 45s)";

/**
 * An instant an option names (`--older-than`, `--created-after`) as epoch milliseconds: given as such, as an ISO date,
 * or as an age counted back from `now`.
 */
export function parseInstant(option: string, text: string, now = Date.now()): number {
  const value = text.trim();
  let ms = Number.NaN;
  const age = /^(\d+)\s*([smhdw])$/.exec(value);
  if (/^\d+$/.test(value)) ms = Number(value);
  else if (age) ms = now - Number(age[1]) * UNIT_MS[age[2]!]!;
  else if (/^\d{4}-\d{2}-\d{2}/.test(value)) ms = Date.parse(value);
  if (Number.isNaN(ms)) throw usageError(`${option} '${text}' is not ${INSTANT_HELP}`);
  if (!Number.isSafeInteger(ms) || ms < 0) {
    throw usageError(`${option} '${text}' is before 1970-01-01 or too large: it must give epoch milliseconds ≥ 0`);
  }
  return ms;
}
