import { cancellationReason } from "./cancellation";

describe("cancellationReason", () => {
  const started = new Date();
  it("says a task that never started was cancelled before it started, whatever its type", () => {
    for (const type of ["TRUNCATE_TIMESERIES", "EVALUATE_TESTS"] as const) {
      expect(cancellationReason({ type, startedAt: null, progress: {}, request: { kind: "runTest" } })).toBe(
        "Cancelled before it started",
      );
    }
  });

  it("says how far a started task got: rows deleted, entities evaluated, or no results pushed", () => {
    const progress = { deleted: 160, evaluated: 3000 };
    expect(cancellationReason({ type: "TRUNCATE_TIMESERIES", startedAt: started, progress, request: {} })).toBe(
      "Cancelled; 160 rows were deleted before the cancellation",
    );
    expect(
      cancellationReason({ type: "EVALUATE_TESTS", startedAt: started, progress, request: { kind: "runTest" } }),
    ).toBe("Cancelled; 3000 entities were evaluated");
    expect(
      cancellationReason({ type: "EVALUATE_TESTS", startedAt: started, progress, request: { kind: "evaluate" } }),
    ).toBe("Cancelled before its results were pushed");
  });
});
