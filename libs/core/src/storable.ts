import { badInput } from "./errors";

/**
 * Refuses `value` (found at `at` in the input, "" for the whole of it) if any string or key in it holds a NUL.
 * PostgreSQL stores no U+0000 (NUL) in text or jsonb: a value carrying one fails in the database, after validation,
 * as an error that names no field. Input is checked for it at the edge instead, so the caller learns which field.
 */
export function refuseNul(value: unknown, at: string): void {
  const path = nulPath(value, at);
  if (path !== undefined) {
    const name = path === "" ? "the value" : path;
    throw badInput(`${name} contains the character U+0000 (NUL), which cannot be stored`, { field: name });
  }
}

function nulPath(value: unknown, at: string): string | undefined {
  if (typeof value === "string") return value.includes("\u0000") ? at : undefined;
  if (typeof value !== "object" || value === null) return undefined;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = nulPath(value[i], `${at}[${i}]`);
      if (found !== undefined) return found;
    }
    return undefined;
  }
  for (const [key, inner] of Object.entries(value)) {
    const path = at ? `${at}.${key}` : key;
    if (key.includes("\u0000")) return path;
    const found = nulPath(inner, path);
    if (found !== undefined) return found;
  }
  return undefined;
}
