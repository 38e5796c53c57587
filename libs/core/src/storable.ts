import { badInput } from "./errors";

/**
 * Refuses `value` (found at `at` in the input, "" for the whole of it) if any string or key in it holds what
 * PostgreSQL cannot store: a NUL (U+0000), which text and jsonb refuse, or an unpaired UTF-16 surrogate, which is no
 * Unicode character (jsonb refuses its escape; as text it would silently become U+FFFD). Such a value would fail in the
 * database, after validation, as an error that names no field. Input is checked for it at the edge instead, so the
 * caller learns which field.
 */
export function refuseUnstorable(value: unknown, at: string): void {
  const found = findUnstorable(value, at);
  if (found !== undefined) {
    // A path a thousand levels deep would make a message of kilobytes: its start says where.
    const path = found.path.length > 120 ? `${found.path.slice(0, 120)}…` : found.path;
    const name = path === "" ? "the value" : path;
    throw badInput(`${name} contains ${found.what}, which cannot be stored`, { field: name });
  }
}

declare global {
  interface String {
    /** ES2024, in Node 20; the ES2023 lib this project compiles against lacks it. */
    isWellFormed(): boolean;
  }
}

// eslint-disable-next-line no-control-regex -- NUL is exactly what this looks for
const UNSTORABLE = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

function unstorableCharacterIn(text: string): string | undefined {
  // Both checks are native and cheap (isWellFormed costs nothing on a one-byte string, which holds no surrogate): the
  // regular expression, which says what it found, runs only on the rare string that has something to find.
  if (!text.includes("\u0000") && text.isWellFormed()) return undefined;
  const match = UNSTORABLE.exec(text);
  if (!match) return undefined;
  if (match[0] === "\u0000") return "the character U+0000 (NUL)";
  return `an unpaired surrogate U+${match[0].charCodeAt(0).toString(16).toUpperCase()} (not a Unicode character)`;
}

/**
 * The deepest nesting of arrays and objects accepted, as Jackson (DataHub's JSON library) allows by default. PostgreSQL's
 * jsonb gives up somewhere past ten thousand levels ("stack depth limit exceeded"), and walking such a value here
 * would exhaust this process's stack first.
 */
export const MAX_NESTING = 1000;

/**
 * The largest epoch-millisecond time a caller may give (8.64e15, 275760-09-13): the last a JavaScript Date holds
 * (PostgreSQL's timestamptz reaches further). A larger safe integer would make an Invalid Date, failing as a 500.
 */
export const MAX_EPOCH_MS = 8.64e15;

/** Where in `value` (under `at`) the first string or key that cannot be stored is, and what it holds. */
export function findUnstorable(value: unknown, at: string, depth = 0): { path: string; what: string } | undefined {
  if (typeof value === "string") {
    const what = unstorableCharacterIn(value);
    return what === undefined ? undefined : { path: at, what };
  }
  if (typeof value !== "object" || value === null) return undefined;
  if (depth === MAX_NESTING) return { path: at, what: `more than ${MAX_NESTING} levels of nesting` };
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = findUnstorable(value[i], `${at}[${i}]`, depth + 1);
      if (found !== undefined) return found;
    }
    return undefined;
  }
  for (const [key, inner] of Object.entries(value)) {
    const path = at ? `${at}.${key}` : key;
    const what = unstorableCharacterIn(key);
    if (what !== undefined) return { path, what };
    const found = findUnstorable(inner, path, depth + 1);
    if (found !== undefined) return found;
  }
  return undefined;
}

/**
 * Refuses a text field outside `min`..`max` characters, counted as PostgreSQL's varchar counts them (code points): a
 * JavaScript string's length counts UTF-16 units, two for an emoji, so `.length` would refuse a name that fits.
 */
export function requireLength(field: string, value: string, { min = 0, max }: { min?: number; max: number }): void {
  // A string of at most `max` units holds at most `max` code points: counting them is needed only beyond that.
  const length = value.length <= max ? value.length : codePoints(value);
  if (length >= min && length <= max) return;
  throw badInput(
    min > 0 ? `${field} must be ${min} to ${max} characters long` : `${field} must be at most ${max} characters long`,
  );
}

function codePoints(value: string): number {
  let count = 0;
  for (const _ of value) count++;
  return count;
}
