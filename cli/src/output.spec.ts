import { formatTable } from "./output";

const head = ["task", "type", "state", "created by"];
const rows = [
  ["9b2f0c1e-8a4d-4c39-9f0e-2d6b1a7c5e33", "TRUNCATE_TIMESERIES", "completed", "urn:li:corpuser:datahub"],
  ["0c7e5a92-1b3f-4d8e-a6c4-7f9d2e1b8a40", "EVALUATE_TESTS", "active", "urn:li:corpuser:service_4f1c"],
];
const widest = (text: string) => Math.max(...text.split("\n").map((line) => line.length));

describe("formatTable", () => {
  it("keeps each row on one line when the terminal is wide enough, or when there is no terminal", () => {
    expect(formatTable(head, rows).split("\n")).toHaveLength(7); // top, head, rule, row, rule, row, bottom
    expect(formatTable(head, rows, 200)).toBe(formatTable(head, rows));
  });

  it("fits a terminal narrower than the table by wrapping its widest columns, losing no character", () => {
    const natural = widest(formatTable(head, rows));
    expect(natural).toBeGreaterThan(80);
    const fitted = formatTable(head, rows, 80);
    expect(widest(fitted)).toBeLessThanOrEqual(80);
    const text = fitted.replace(/[│\s]/g, "");
    for (const cell of rows.flat()) {
      // a wrapped cell reads on across lines: its characters are all there, in order
      expect(text).toMatch(
        new RegExp(
          cell
            .split("")
            .map((c) => c.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"))
            .join(".*"),
        ),
      );
    }
  });
});
