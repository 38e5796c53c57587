import type { Queryable } from "@mdp/db";

type Entry = { test?: unknown };

/**
 * A stored `testResults` value as readers are shown it: without the entries of tests deleted since, or edited so that
 * they no longer select the entity's type. Pushes remove such entries from storage only when they next write the
 * entity's results (rewriting every entity a test ever touched when it is deleted would be unbounded work), so each read
 * path hides them the same way: GraphQL `testResults` (MetadataTestService.results) and GET /gms/entities, through this.
 * Anything else in the value is returned as stored.
 */
export async function standingTestResults(db: Queryable, entityType: string, value: unknown): Promise<unknown> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return value;
  const stored = value as { passing?: unknown; failing?: unknown };
  const entries = (list: unknown): Entry[] => (Array.isArray(list) ? (list as Entry[]) : []);
  const named = [...entries(stored.passing), ...entries(stored.failing)]
    .map((e) => (typeof e === "object" && e !== null ? e.test : undefined))
    .filter((test): test is string => typeof test === "string");
  if (named.length === 0) return value;
  const { rows } = await db.query<{ urn: string }>(
    "SELECT urn FROM metadata_test WHERE urn = ANY($1::text[]) AND $2 = ANY(on_types)",
    [[...new Set(named)], entityType],
  );
  const standing = new Set(rows.map((r) => r.urn));
  const keep = (list: unknown) =>
    Array.isArray(list) ? (list as Entry[]).filter((e) => typeof e?.test !== "string" || standing.has(e.test)) : list;
  return { ...stored, passing: keep(stored.passing), failing: keep(stored.failing) };
}
