import { counted, fitTable, formatTable, reportText, wrapText } from "./output";

const head = ["task", "type", "state", "progress", "created by"];
const rows = [
  [
    "9b2f0c1e-8a4d-4c39-9f0e-2d6b1a7c5e33",
    "TRUNCATE_TIMESERIES",
    "completed",
    "1,500 of 1,500 rows deleted (100%)",
    "urn:li:corpuser:datahub",
  ],
  [
    "0c7e5a92-1b3f-4d8e-a6c4-7f9d2e1b8a40",
    "EVALUATE_TESTS",
    "active",
    "2 of 9 entities evaluated (22%)",
    "urn:li:corpuser:service_4f1c",
  ],
];
const widest = (text: string) => Math.max(...text.split("\n").map((line) => line.length));

describe("formatTable", () => {
  it("keeps each row on one line when the terminal is wide enough, or when there is no terminal", () => {
    expect(formatTable(head, rows).split("\n")).toHaveLength(7); // top, head, rule, row, rule, row, bottom
    expect(formatTable(head, rows, 200)).toBe(formatTable(head, rows));
  });

  it("fits a narrower terminal by cutting free text first, then leaving columns out from the right, ids whole", () => {
    const natural = widest(formatTable(head, rows));
    expect(natural).toBeGreaterThan(120);
    // 120 columns: the progress cut (…), everything else whole
    const cut = fitTable(head, rows, natural - 10, { shorten: ["progress"] });
    expect(cut.head).toEqual(head);
    expect(cut.rows[0]![3]).toMatch(/…$/);
    expect(cut.rows.map((row) => row[4])).toEqual(rows.map((row) => row[4]));
    // 80 columns: the urns and then the cut progress left out, never split; the ids whole on one line each
    const fitted = fitTable(head, rows, 80, { shorten: ["progress"] });
    expect(fitted.head).toEqual(["task", "type", "state"]);
    expect(fitted.left).toEqual(["progress", "created by"]);
    const table = formatTable(head, rows, 80, { shorten: ["progress"] });
    expect(widest(table)).toBeLessThanOrEqual(80);
    for (const row of rows) expect(table.split("\n").filter((line) => line.includes(row[0]!))).toHaveLength(1);
  });

  it("keeps the columns it is told to, and the first, however narrow the terminal", () => {
    const fitted = fitTable(head, rows, 40, { keep: ["created by"] });
    expect(fitted.head).toEqual(["task", "created by"]);
    expect(fitted.rows[1]).toEqual([rows[1]![0], rows[1]![4]]); // wider than 40: whole all the same
  });
});

describe("wrapText", () => {
  it("breaks text at its spaces, a long word where it must, and never an id", () => {
    expect(wrapText("a bb ccc dddd", 6)).toBe("a bb\nccc\ndddd");
    expect(wrapText(`see ${"x".repeat(10)} now`, 6)).toBe(`see\nxxxxxx\nxxxx\nnow`);
    expect(wrapText("see urn:li:corpuser:someone now", 6)).toBe("see\nurn:li:corpuser:someone\nnow");
    expect(wrapText("short", 6)).toBe("short");
  });
});

describe("counts in words", () => {
  it("agree with their noun, in one number format", () => {
    expect(counted(1, "partition")).toBe("1 partition");
    expect(counted(0, "partition")).toBe("0 partitions");
    expect(counted(1500, "row")).toBe("1,500 rows");
    expect(counted(1, "batch", "batches")).toBe("1 batch");
  });

  it("write the dry run's sentence with the counts the rest of the output has", () => {
    expect(reportText("Delete 1500 out of 2500 rows (60.00%). Issuing a delete by query request.")).toBe(
      "Delete 1,500 out of 2,500 rows (60.00%). Issuing a delete by query request.",
    );
  });
});
