import type { RunDiffRow } from "@mdp/db";
import { RUN_DIFF_LIST_LIMITS, withBatch } from "./test-run-diff";

const row = (): RunDiffRow => ({
  runId: "run",
  testUrn: "urn:li:test:t",
  previousRunId: null,
  startedAt: new Date(0),
  baselineAt: new Date(0),
  flapSince: new Date(0),
  flapChanges: 2,
  flapRuns: 5,
  lastBatchAt: null,
  evaluated: 0,
  newlyFailingCount: 0,
  newlyPassingCount: 0,
  flappingCount: 0,
  newlyFailing: [],
  newlyPassing: [],
  flapping: [],
});
const state = (urn: string, passing: boolean, previous: boolean | null, changes = 0, latestAt = 10) => ({
  urn,
  passing,
  previous,
  changes,
  latestAt,
});

describe("a run diff's batch", () => {
  it("lists changes against the baseline and flaps past the threshold; unchanged entities only count", () => {
    const next = withBatch(
      row(),
      [
        state("a", false, true, 1),
        state("b", true, false, 3),
        state("c", true, true, 5),
        state("d", false, null, 0, 20),
      ],
      15,
    );
    expect(next).toMatchObject({
      evaluated: 4,
      newlyFailingCount: 2,
      newlyFailing: [
        { urn: "a", previous: true },
        { urn: "d", previous: null },
      ],
      newlyPassingCount: 1,
      newlyPassing: [{ urn: "b", previous: false }],
      flappingCount: 2,
      flapping: [
        { urn: "b", passing: true, changes: 3 },
        { urn: "c", passing: true, changes: 5 },
      ],
      // the latest recorded change, when later than the batch's evaluation (a pair's times never go backwards)
      lastBatchAt: new Date(20),
    });
  });

  it(`keeps at most ${RUN_DIFF_LIST_LIMITS.entities} entities and ${RUN_DIFF_LIST_LIMITS.bytes} bytes per list, counting all`, () => {
    let diff = row();
    for (let batch = 0; batch < 3; batch++) {
      diff = withBatch(
        diff,
        Array.from({ length: 50 }, (_, i) => state(`urn:${batch}:${i}`, false, true)),
        1,
      );
    }
    expect(diff.newlyFailingCount).toBe(150);
    expect(diff.newlyFailing).toHaveLength(RUN_DIFF_LIST_LIMITS.entities);
    expect(diff.newlyFailing.at(-1)!.urn).toBe("urn:1:49");

    const long = "x".repeat(2_000); // stored urns are shorter; the byte bound holds whatever they are
    const wide = withBatch(
      row(),
      Array.from({ length: 60 }, (_, i) => state(`${long}${i}`, true, false)),
      1,
    );
    expect(wide.newlyPassingCount).toBe(60);
    expect(Buffer.byteLength(JSON.stringify(wide.newlyPassing))).toBeLessThanOrEqual(RUN_DIFF_LIST_LIMITS.bytes);
    expect(wide.newlyPassing.length).toBe(Math.floor(RUN_DIFF_LIST_LIMITS.bytes / (2_000 + 30)));
  });
});
