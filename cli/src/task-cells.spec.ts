/** What `mdp tasks status` and `mdp tasks watch` show of a task beside its counts. */
import { cellOf } from "./commands/operations";
import { formatRecord } from "./output";
import type { TaskStatus } from "./task-status";
import { etaOf, rateOf } from "./watch";

describe("a task's request and result in the status table", () => {
  it("shows short JSON whole", () => {
    expect(cellOf({ deleted: 5, batches: 1 })).toBe('{"deleted":5,"batches":1}');
    expect(cellOf(null)).toBe("-");
  });

  it("shows an evaluation's result as its counts, not 900 columns of rules", () => {
    const rule = { path: "rules[0]", property: "x", operator: "equals", expected: ["y"], actual: ["z".repeat(50)] };
    const result = {
      urn: "urn:li:dataset:(urn:li:dataPlatform:hive,sales.orders,PROD)",
      passing: [{ test: "urn:li:test:a", type: "SUCCESS" }],
      failing: [1, 2, 3].map((n) => ({ test: `urn:li:test:${n}`, type: "FAILURE", failedRules: [rule] })),
      notApplicable: [],
    };
    expect(cellOf(result)).toBe(
      "urn:li:dataset:(urn:li:dataPlatform:hive,sales.orders,PROD): 1 passing, 3 failing, 0 not applicable (--json for the rules)",
    );
  });

  it("shows an evaluation task's stored result ({results: {<urn>: <answer>}}) as its counts", () => {
    const rule = { path: "rules[0]", property: "x", operator: "exists", actual: [], message: "m".repeat(80) };
    const answer = (urn: string) => ({
      urn,
      passing: [],
      failing: [{ test: "urn:li:test:owned", type: "FAILURE", failedRules: [rule] }],
      notApplicable: [],
      evaluatedAt: 1795729664000,
    });
    const orders = "urn:li:dataset:(urn:li:dataPlatform:hive,sales.orders,PROD)";
    const refunds = "urn:li:dataset:(urn:li:dataPlatform:hive,sales.refunds,PROD)";
    expect(cellOf({ results: { [orders]: answer(orders) } })).toBe(
      `${orders}: 0 passing, 1 failing, 0 not applicable (--json for the rules)`,
    );
    expect(cellOf({ results: { [orders]: answer(orders), [refunds]: answer(refunds) } })).toBe(
      "2 entities: 0 passing, 2 failing, 0 not applicable results (--json for each entity's rules)",
    );
  });

  it("fits an 80-column terminal by wrapping text, at its spaces where it has some, never inside an id", () => {
    const reason = "the worker stopped it: " + "every batch took too long ".repeat(4).trim();
    const request = JSON.stringify({ entityType: "dataset", aspect: "datasetProfile", endTimeMillis: 1700000000000 });
    const table = formatRecord(
      [
        ["task", "0345bee3-6bd8-46ff-8070-c05c2dbd3e33"],
        ["failed because", reason],
        ["request", request],
      ],
      80,
    );
    const lines = table.split("\n");
    expect(Math.max(...lines.map((line) => line.length))).toBeLessThanOrEqual(80);
    const values = lines.map((line) => line.split("│")[2]?.trim() ?? "");
    expect(values.join(" ")).toContain(reason);
    expect(values.join("")).toContain(request);
    expect(values).toContain("0345bee3-6bd8-46ff-8070-c05c2dbd3e33");
    // without a terminal (a pipe, a file), nothing wraps
    expect(formatRecord([["failed because", reason]]).split("\n")[1]).toContain(reason);
  });

  it("keeps a urn longer than the terminal whole on one line", () => {
    const urn = `urn:li:dataset:(urn:li:dataPlatform:hive,${"a".repeat(90)},PROD)`;
    const lines = formatRecord([["created by", urn]], 80).split("\n");
    expect(lines.filter((line) => line.includes(urn))).toHaveLength(1);
  });

  it("cuts anything else long, saying how to see it all", () => {
    const cell = cellOf({ urns: Array.from({ length: 100 }, (_, i) => `urn:li:dataset:${i}`) });
    expect(cell.length).toBeLessThan(160);
    expect(cell).toMatch(/… \([\d,]+ characters; --json shows all of it\)$/);
  });
});

describe("the progress bar's ETA", () => {
  const status = (state: string, cancelRequested = false) => ({ state, cancelRequested }) as TaskStatus;
  it("estimates while a task runs", () => {
    expect(etaOf(status("active"), 100, 1000)).toBe("10s");
  });
  it("shows none once the task is being cancelled or has ended", () => {
    expect(etaOf(status("active", true), 100, 1000)).toBe("-");
    expect(etaOf(status("cancelled", true), 100, 1000)).toBe("-");
    expect(etaOf(status("completed"), 100, 0)).toBe("-");
  });
});

describe("the progress bar's rate", () => {
  const status = (state: string) => ({ state, cancelRequested: false }) as TaskStatus;
  it("shows the rate measured while the task ran, an ended task's included", () => {
    expect(rateOf(status("active"), 1234.4, "rows")).toBe("1,234 rows/s");
    expect(rateOf(status("active"), 0, "rows")).toBe("0 rows/s");
    expect(rateOf(status("completed"), 500, "rows")).toBe("500 rows/s");
  });
  it("shows none for a task that had ended before the watch saw it move", () => {
    expect(rateOf(status("completed"), 0, "rows")).toBe("-");
    expect(rateOf(status("active"), undefined, "rows")).toBe("-");
  });
});
