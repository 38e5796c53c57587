/** The values a property path reaches. */
export interface ResolvedValues {
  /** every non-null value reached, lists flattened */
  values: unknown[];
  /** whether a list was crossed on the way: the values are elements of a collection, not one value */
  fannedOut: boolean;
}

/**
 * Follows a dot path (`ownership.owners.owner`) into JSON. Lists fan out at every level, so the path reaches every
 * owner of every owners entry; null and missing values are dropped, so "no value" is simply an empty result.
 */
export function resolvePath(root: unknown, path: string): ResolvedValues {
  const result: ResolvedValues = { values: [], fannedOut: false };
  collect(root, path.split("."), 0, result);
  return result;
}

function collect(value: unknown, segments: readonly string[], index: number, result: ResolvedValues): void {
  if (value === null || value === undefined) return;
  if (Array.isArray(value)) {
    result.fannedOut = true;
    for (const item of value) collect(item, segments, index, result);
    return;
  }
  if (index === segments.length) {
    result.values.push(value);
    return;
  }
  if (typeof value !== "object") return;
  // Map keys may contain dots themselves (custom properties such as "spark.app.name"), so every way of reading the
  // remaining segments as one key is followed, not just the next segment. Own keys only: "constructor" must not
  // reach Object.prototype.
  for (let end = index + 1; end <= segments.length; end++) {
    const key = segments.slice(index, end).join(".");
    if (Object.hasOwn(value, key)) collect((value as Record<string, unknown>)[key], segments, end, result);
  }
}
