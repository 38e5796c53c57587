import type { TruncationPlan } from "@mdp/db";
import { report } from "./truncation.service";

const plan = (toDelete: number, totalRows: number): TruncationPlan => ({
  totalRows,
  toDelete,
  wholePartitions: [],
  boundary: null,
  strategy: "deleteByQuery",
});

describe("the dry-run report", () => {
  it("gives the share with two decimals", () => {
    expect(report(plan(123, 1000))).toMatch(/^Delete 123 out of 1000 rows \(12\.30%\)\. /);
    expect(report(plan(0, 0))).toMatch(/^Delete 0 out of 0 rows \(0\.00%\)\. /);
    expect(report(plan(50, 50))).toMatch(/^Delete 50 out of 50 rows \(100\.00%\)\. /);
  });

  it("never reads 100.00% while rows stay, nor 0.00% while some go", () => {
    expect(report(plan(99_999, 100_000))).toContain("(99.99%)");
    expect(report(plan(1, 1_000_000))).toContain("(0.01%)");
  });
});
