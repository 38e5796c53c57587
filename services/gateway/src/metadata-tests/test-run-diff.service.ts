import { z } from "zod";
import { notFound } from "@mdp/core";
import { type Database, replicaReads, type RunDiffChange, type RunDiffFlap, type RunDiffRow } from "@mdp/db";
import { textField, urnField } from "../shared/validate";

export const testRunDiffArgs = z.object({
  testUrn: urnField("test"),
  // A task id (a uuid today): bounded as any id a caller passes; absent means the test's latest run.
  runId: textField({ min: 1, max: 256 })
    .nullish()
    .transform((id) => id ?? null),
});

type ResultType = "SUCCESS" | "FAILURE";
const typeOf = (passing: boolean): ResultType => (passing ? "SUCCESS" : "FAILURE");

/** One list of a run's diff: `total` is whole, `entities` the first ones kept (truncated says it was cut). */
export interface RunDiffEntitiesView {
  total: number;
  truncated: boolean;
  entities: Array<{ urn: string; type: ResultType; previousType: ResultType | null; changes: number | null }>;
}

export interface TestRunDiffView {
  testUrn: string;
  runId: string;
  previousRunId: string | null;
  startedAt: number;
  baselineAt: number;
  lastBatchAt: number | null;
  evaluated: number;
  newlyFailing: RunDiffEntitiesView;
  newlyPassing: RunDiffEntitiesView;
  flapping: RunDiffEntitiesView;
  flapChanges: number;
  flapRuns: number;
  flapSince: number;
}

/**
 * testRunDiff (docs/scheduled-tests.md "What changed since the last run"): what one run of a test changed, as the
 * evaluation workers recorded it batch by batch (services/evaluation-worker/src/test-run-diff.ts). Reading it needs
 * what reading the test's result history needs (VIEW_TESTS).
 */
export class TestRunDiffService {
  constructor(private readonly db: Database) {}

  async diff({ testUrn, runId }: z.output<typeof testRunDiffArgs>): Promise<TestRunDiffView> {
    const row = await replicaReads.findRunDiff(this.db.stale, testUrn, runId);
    if (!row) {
      throw notFound(
        runId === null
          ? `Test ${testUrn} has no recorded run: runs that push record what they changed`
          : `Run ${runId} of test ${testUrn} has no recorded diff: it is not a run of this test that pushed, has not evaluated a batch yet, or was pruned`,
      );
    }
    return view(row);
  }
}

function view(row: RunDiffRow): TestRunDiffView {
  const changes = (total: number, list: RunDiffChange[], type: ResultType): RunDiffEntitiesView => ({
    total,
    truncated: list.length < total,
    entities: list.map((e) => ({
      urn: e.urn,
      type,
      previousType: e.previous === null ? null : typeOf(e.previous),
      changes: null,
    })),
  });
  const flaps = (list: RunDiffFlap[]): RunDiffEntitiesView => ({
    total: row.flappingCount,
    truncated: list.length < row.flappingCount,
    entities: list.map((e) => ({ urn: e.urn, type: typeOf(e.passing), previousType: null, changes: e.changes })),
  });
  return {
    testUrn: row.testUrn,
    runId: row.runId,
    previousRunId: row.previousRunId,
    startedAt: row.startedAt.getTime(),
    baselineAt: row.baselineAt.getTime(),
    lastBatchAt: row.lastBatchAt?.getTime() ?? null,
    evaluated: row.evaluated,
    newlyFailing: changes(row.newlyFailingCount, row.newlyFailing, "FAILURE"),
    newlyPassing: changes(row.newlyPassingCount, row.newlyPassing, "SUCCESS"),
    flapping: flaps(row.flapping),
    flapChanges: row.flapChanges,
    flapRuns: row.flapRuns,
    flapSince: row.flapSince.getTime(),
  };
}
