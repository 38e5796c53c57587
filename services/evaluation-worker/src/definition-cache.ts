import { definitionFromJson, type ParsedDefinition, type TestToRun } from "@mdp/metadata-tests";
import type { StoredTest } from "./evaluation.store";

const MAX_ENTRIES = 10_000;

/**
 * Parsed definitions, memoized by the hash of their stored text. This is not a cache of tests: every evaluation reads
 * the tests from PostgreSQL, and only when a test's definition hashes as the one parsed before is the parse
 * (validation, regex compilation) skipped. An edited test has a new hash, so it is parsed again; it cannot be stale.
 */
export class DefinitionCache {
  private readonly parsed = new Map<string, { hash: string; definition: ParsedDefinition }>();

  toRun(test: StoredTest): TestToRun {
    const known = this.parsed.get(test.urn);
    if (known && known.hash === test.hash) return { urn: test.urn, definition: known.definition };
    // Stored definitions are re-validated rather than cast: a row written by an older version cannot misbehave.
    const definition = definitionFromJson(test.definition);
    if (this.parsed.size >= MAX_ENTRIES) this.parsed.clear();
    this.parsed.set(test.urn, { hash: test.hash, definition });
    return { urn: test.urn, definition };
  }
}
