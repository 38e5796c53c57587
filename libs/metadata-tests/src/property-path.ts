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
 * is followed, not just the next segment. Worked out once per path: an evaluation walks each path across every
 * element of every list it meets.
 *
 * That is n(n+1)/2 keys whose characters add up to about n³/6 segments' worth, so it is bounded by the parser's
 * limits on a property (DEFINITION_LIMITS: 32 segments, 512 characters, about 90 K characters of keys at worst), and
 * the cache by the characters it holds, not by how many paths: a few long paths cannot fill memory the way 10,000
 * cached 1,000-segment paths (gigabytes) did.
 */
type PathKeys = string[][];

const MAX_CACHED_CHARS = 1 << 20; // 2 MiB of UTF-16
const pathKeys = new Map<string, { keys: PathKeys; chars: number }>();
let cachedChars = 0;

function keysOf(path: string): PathKeys {
  const hit = pathKeys.get(path);
  if (hit) return hit.keys;
  const segments = path.split(".");
  // Keys are slices of the path between segment boundaries, built span by span rather than by re-joining segments.
  const starts: number[] = [];
  const ends: number[] = [];
  let offset = 0;
  for (const segment of segments) {
    starts.push(offset);
    ends.push(offset + segment.length);
    offset += segment.length + 1;
  }
  let chars = 0;
  const keys = starts.map((start, index) => {
    const spans: string[] = [];
    for (let end = index; end < segments.length; end++) {
      spans.push(path.slice(start, ends[end]));
      chars += ends[end]! - start;
    }
    return spans;
  });
  remember(path, keys, chars + path.length);
  return keys;
}

/** Caches a path's keys within MAX_CACHED_CHARS, evicting the least recently added paths to make room. */
function remember(path: string, keys: PathKeys, chars: number): void {
  if (chars > MAX_CACHED_CHARS) return;
  for (const [oldest, entry] of pathKeys) {
    if (cachedChars + chars <= MAX_CACHED_CHARS) break;
    pathKeys.delete(oldest);
    cachedChars -= entry.chars;
  }
  pathKeys.set(path, { keys, chars });
  cachedChars += chars;
}

/** Characters the path cache holds (for tests of its bound). */
export function cachedPathChars(): number {
  return cachedChars;
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
