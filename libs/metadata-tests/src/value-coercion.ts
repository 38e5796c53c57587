/**
 * How entity metadata values are read by the operators. Metadata arrives as JSON produced by many ingestion sources,
 * so the same fact may be a number or a numeric string, a boolean or "true": comparisons accept both spellings.
 */

/** Strings as they are, numbers and booleans as they print; objects and lists have no text. */
export function asText(value: unknown): string | undefined {
  if (typeof value === "string") return value;
  if (typeof value === "boolean") return String(value);
  if (typeof value === "number" && Number.isFinite(value)) return String(value);
  return undefined;
}

// Plain decimal notation only: Number() would also accept "0x1f", "Infinity" and "" (as 0).
const DECIMAL = /^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?$/;

/** A finite number, or a string holding one in decimal notation. */
export function asNumber(value: unknown): number | undefined {
  if (typeof value === "number") return Number.isFinite(value) ? value : undefined;
  if (typeof value === "string" && DECIMAL.test(value.trim())) return Number(value.trim());
  return undefined;
}

/** A boolean, or the string "true"/"false" in any case. */
export function asBoolean(value: unknown): boolean | undefined {
  if (typeof value === "boolean") return value;
  if (typeof value !== "string") return undefined;
  const text = value.trim().toLowerCase();
  if (text === "true") return true;
  if (text === "false") return false;
  return undefined;
}

/** Text equality, or numeric equality when both sides are numbers ("1.0" equals 1). */
export function scalarEquals(actual: unknown, expected: string): boolean {
  const text = asText(actual);
  if (text === undefined) return false;
  if (text === expected) return true;
  const left = asDecimal(text);
  const right = asDecimal(expected);
  return left !== undefined && right !== undefined && compareDecimals(left, right) === 0;
}

/** A finite number as it prints, or a string holding one in decimal notation, trimmed: the text to compare exactly. */
export function asDecimal(value: unknown): string | undefined {
  if (typeof value === "number") return Number.isFinite(value) ? String(value) : undefined;
  if (typeof value !== "string") return undefined;
  const text = value.trim();
  return DECIMAL.test(text) ? text : undefined;
}

/** Short enough to hold at most 15 significant digits, which a double represents exactly, and no exponent. */
const EXACT_AS_DOUBLE = /^[+-]?[\d.]{1,15}$/;

/**
 * The order of two numbers in decimal notation (see asDecimal), exactly: identifiers and counters beyond a double's
 * 15-17 significant digits ("12345678901234567890" and "...891"), or beyond its range (1e400), compare as the numbers
 * they write, not as the doubles nearest to them.
 */
export function compareDecimals(left: string, right: string): number {
  if (EXACT_AS_DOUBLE.test(left) && EXACT_AS_DOUBLE.test(right)) return Math.sign(Number(left) - Number(right));
  const a = decimalParts(left);
  const b = decimalParts(right);
  if (a.sign !== b.sign) return a.sign < b.sign ? -1 : 1;
  if (a.sign === 0) return 0;
  const magnitude = a.point !== b.point ? (a.point < b.point ? -1 : 1) : compareDigits(a.digits, b.digits);
  return a.sign * magnitude;
}

/** sign (-1, 0, 1), significant digits without leading or trailing zeros, and where the point falls: 0.digits × 10^point. */
function decimalParts(text: string): { sign: number; digits: string; point: bigint } {
  const [mantissa = "", exponent = "0"] = text.toLowerCase().split("e");
  const negative = mantissa.startsWith("-");
  const unsigned = mantissa.replace(/^[+-]/, "");
  const [whole = "", fraction = ""] = unsigned.split(".");
  const all = whole + fraction;
  const leading = all.length - all.replace(/^0+/, "").length;
  const digits = all.slice(leading).replace(/0+$/, "");
  if (digits === "") return { sign: 0, digits, point: 0n };
  // A bigint: an exponent past 2^53 ("1e9007199254740993") still compares exactly.
  return { sign: negative ? -1 : 1, digits, point: BigInt(whole.length - leading) + BigInt(exponent) };
}

function compareDigits(a: string, b: string): number {
  const width = Math.max(a.length, b.length);
  const x = a.padEnd(width, "0");
  const y = b.padEnd(width, "0");
  return x === y ? 0 : x < y ? -1 : 1;
}
