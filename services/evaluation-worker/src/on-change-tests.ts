import type { Privilege } from "@mdp/core";
import {
  onChangeTestsNamed,
  onChangeTestsSelecting,
  ownerKey,
  suspendUnlessOwnerMay,
  testDefinitions,
  type OnChangeTestRow,
} from "@mdp/db";
import { scheduledTestNeeds } from "@mdp/schedules";
import type { EvaluateDeps } from "./evaluation-deps";
import type { StoredTest } from "./evaluation.store";
import { ON_CHANGE_SUSPENDED_ACTION, type OnChangeSettings } from "./on-change-settings";

/** Test definitions one worker keeps for evaluation on change (past it, the cache starts again). */
const MAX_CACHED_DEFINITIONS = 10_000;

/**
 * The tests that evaluate on change, for one worker: their definitions (cached by row version), whether their owners
 * hold what they need now (the others suspended), and the runs of those whose definition changed.
 */
export class OnChangeTests {
  /** definitions of tests that evaluate on change, by urn, with the row version they were read at */
  private readonly definitions = new Map<string, { version: string; hash: string; definition: unknown }>();

  constructor(
    private readonly deps: Pick<EvaluateDeps, "db" | "ownerPrivileges" | "logger">,
    private readonly settings: Pick<OnChangeSettings, "rootUserUrn" | "storable" | "startRun">,
  ) {}

  /**
   * The tests that evaluate on change and select these types (of one owner), with their definitions: read from the
   * cache while a test's row is the version read before, else read once (every pass of every partition asks, and a
   * definition may weigh hundreds of KiB: re-reading each was most of a busy worker's main thread).
   */
  async testsSelecting(types: readonly string[], ownerUrn?: string): Promise<StoredTest[]> {
    const rows = await onChangeTestsSelecting(this.deps.db.pool, types, ownerUrn);
    const stale = rows.filter((r) => this.definitions.get(r.urn)?.version !== r.version).map((r) => r.urn);
    if (stale.length > 0) {
      if (this.definitions.size + stale.length > MAX_CACHED_DEFINITIONS) this.definitions.clear();
      for (const d of await testDefinitions(this.deps.db.pool, stale)) this.definitions.set(d.urn, d);
    }
    return rows.flatMap((row: OnChangeTestRow) => {
      const known = this.definitions.get(row.urn);
      // Deleted between the two reads: nothing to evaluate. (Written again between them: the later definition,
      // the one a later event of its edit would evaluate anyway.)
      if (!known) return [];
      const { version: _version, ...test } = row;
      return [{ ...test, hash: known.hash, definition: known.definition }];
    });
  }

  /** Tests whose definition changed, that evaluate on change: a run over every entity each selects, for its owner. */
  async runEdited(edited: ReadonlySet<string>, refused: Set<string>): Promise<number> {
    if (edited.size === 0) return 0;
    const tests = await this.permitted(await onChangeTestsNamed(this.deps.db.pool, [...edited]), refused);
    let runs = 0;
    for (const test of tests) {
      if (!test.onTypes.every(this.settings.storable)) continue; // its results could not be pushed, as runTest refuses
      await this.settings.startRun(test);
      runs++;
    }
    return runs;
  }

  /**
   * Of these tests, those whose owner holds now what their work needs (read afresh, through the token the owner set
   * the test with); the others are suspended (audited once, like a scheduled test's firing) and left out.
   */
  async permitted(tests: StoredTest[], refused: Set<string>): Promise<StoredTest[]> {
    const grants = new Map<string, Promise<ReadonlySet<Privilege>>>();
    const kept: StoredTest[] = [];
    for (const test of tests) {
      const key = ownerKey(owner(test));
      if (!grants.has(key)) grants.set(key, this.deps.ownerPrivileges(owner(test)));
      const held = await grants.get(key)!;
      const needs = scheduledTestNeeds(test.definition);
      if (needs.every((p) => held.has(p))) {
        kept.push(test);
        continue;
      }
      refused.add(test.urn);
      await suspendUnlessOwnerMay(this.deps.db.prisma, {
        work: { kind: "SCHEDULED_TEST", urn: test.urn },
        ownerUrn: test.ownerUrn,
        ownerTokenId: test.ownerTokenId,
        needs,
        rootUserUrn: this.settings.rootUserUrn,
        action: ON_CHANGE_SUSPENDED_ACTION,
        via: "test-on-change",
        trigger: "change",
      });
      this.deps.logger.warn(
        { test: test.urn, owner: test.ownerUrn, missingPrivileges: needs.filter((p) => !held.has(p)) },
        "evaluation on change suspended: the test's owner no longer holds what it needs",
      );
    }
    return kept;
  }
}

function owner(test: StoredTest) {
  return { urn: test.ownerUrn, tokenId: test.ownerTokenId, suspended: false };
}
