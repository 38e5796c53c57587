import { TestHistoryRetention } from "./test-result-history";

/** A pool whose statements answer `rowCounts` in turn, or fail with `error` once those are spent. */
function pool(rowCounts: number[], error?: Error) {
  const query = jest.fn(async (text: string) => {
    const rowCount = rowCounts.shift();
    if (rowCount === undefined) throw error ?? new Error(`unexpected statement: ${text}`);
    return { rowCount, rows: [] };
  });
  return { query } as unknown as ConstructorParameters<typeof TestHistoryRetention>[0] & { query: typeof query };
}

describe("TestHistoryRetention", () => {
  it("deletes the transitions, then the run diffs, a batch at a time until each is caught up", async () => {
    const db = pool([5_000, 12, 3]);
    await expect(new TestHistoryRetention(db, 30).prune()).resolves.toBe(5_015);
    expect(db.query.mock.calls.map(([text]) => /test_run_diff/.test(text))).toEqual([false, false, true]);
  });

  it("fails when a statement fails, so its chore's firing fails rather than reporting nothing pruned", async () => {
    const db = pool([5_000], new Error("connection terminated unexpectedly"));
    await expect(new TestHistoryRetention(db, 30).prune()).rejects.toThrow("connection terminated unexpectedly");
  });
});
