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
  const left = asNumber(text);
  const right = asNumber(expected);
  return left !== undefined && right !== undefined && left === right;
}
