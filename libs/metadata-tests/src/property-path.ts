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
  collect(root, keysOf(path), 0, result);
  return result;
}

/**
 * A path's keys: `keys[index][end - index - 1]` is segments index..end-1 joined with dots. Map keys may contain dots
 * themselves (custom properties such as "spark.app.name"), so every way of reading the remaining segments as one key
 * is followed, not just the next segment. Worked out once per path: paths come from test definitions, so there are
 * few, and an evaluation walks each of them across every element of every list it meets.
 */
type PathKeys = string[][];

const MAX_PATHS = 10_000;
const pathKeys = new Map<string, PathKeys>();

function keysOf(path: string): PathKeys {
  let keys = pathKeys.get(path);
  if (!keys) {
    const segments = path.split(".");
    keys = segments.map((_, index) =>
      segments.slice(index).map((_, length) => segments.slice(index, index + length + 1).join(".")),
    );
    if (pathKeys.size >= MAX_PATHS) pathKeys.clear();
    pathKeys.set(path, keys);
  }
  return keys;
}

function collect(value: unknown, keys: PathKeys, index: number, result: ResolvedValues): void {
  if (value === null || value === undefined) return;
  if (Array.isArray(value)) {
    result.fannedOut = true;
    for (const item of value) collect(item, keys, index, result);
    return;
  }
  if (index === keys.length) {
    result.values.push(value);
    return;
  }
  if (typeof value !== "object") return;
  // Own keys only: "constructor" must not reach Object.prototype.
  const candidates = keys[index]!;
  for (let length = 0; length < candidates.length; length++) {
    const key = candidates[length]!;
    if (Object.hasOwn(value, key)) collect((value as Record<string, unknown>)[key], keys, index + length + 1, result);
  }
}
