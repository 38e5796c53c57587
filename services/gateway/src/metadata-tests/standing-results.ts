import { urnsOfTestsSelectingType, type Queryable } from "@mdp/db";

/**
 * A stored `testResults` value as readers are shown it: without the entries of tests deleted since, or edited so that
 * they no longer select the entity's type. Pushes remove such entries from storage only when they write the entity's
 * results anyway, because a pushed test's result changed (rewriting every entity a test ever touched when it is deleted
 * would be unbounded work, and a version and an event for each), so each read path hides them the same way: GraphQL `testResults` (MetadataTestService.results) and GET /gms/entities, through this.
 * Anything else in the value is returned as stored.
 */
export async function standingTestResults(db: Queryable, entityType: string, value: unknown): Promise<unknown> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return value;
  const stored = value as { passing?: unknown; failing?: unknown };
  const listed = (list: unknown): unknown[] => (Array.isArray(list) ? list : []);
  const named = [...listed(stored.passing), ...listed(stored.failing)].map(testOf).filter((t) => t !== undefined);
  if (named.length === 0) return value;
  const standing = new Set(await urnsOfTestsSelectingType(db, [...new Set(named)], entityType));
  const stands = (entry: unknown) => {
    const test = testOf(entry);
    return test === undefined || standing.has(test);
  };
  const keep = (list: unknown) => (Array.isArray(list) ? list.filter(stands) : list);
  return { ...stored, passing: keep(stored.passing), failing: keep(stored.failing) };
}

/** The test an entry names, if it is an entry of a test at all. */
function testOf(entry: unknown): string | undefined {
  const test = typeof entry === "object" && entry !== null ? (entry as { test?: unknown }).test : undefined;
  return typeof test === "string" ? test : undefined;
}
