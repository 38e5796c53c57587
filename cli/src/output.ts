import Table from "cli-table3";

/** What every command gets from the global options. */
export interface GlobalOptions {
  json?: boolean;
}

/** `--json`: one JSON document on stdout, nothing else there. */
export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

export function printLine(line = ""): void {
  process.stdout.write(`${line}\n`);
}

/**
 * A table for people: one row per item. Plain (no colours) when stdout is not a terminal; on a terminal no wider than
 * it (the widest columns wrap first), as a list of urns and ids would otherwise run far past it.
 */
export function printTable(head: string[], rows: Array<Array<string | number>>): void {
  const tty = process.stdout.isTTY;
  printLine(formatTable(head, rows, tty ? process.stdout.columns : undefined, tty ? ["cyan"] : []));
}

/** The narrowest a wrapped column gets, padding included. */
const MIN_COLUMN = 8;

/** printTable's table, no wider than `columns` when given: the widest column gives a character up until it fits. */
export function formatTable(
  head: string[],
  rows: Array<Array<string | number>>,
  columns?: number,
  headStyle: string[] = [],
): string {
  const cells = rows.map((row) => row.map((cell) => String(cell)));
  const widths = head.map((h, i) => Math.max(h.length, ...cells.map((row) => row[i]?.length ?? 0)) + 2);
  const borders = head.length + 1;
  const fitted = columns !== undefined && widths.reduce((a, b) => a + b, borders) > columns;
  if (fitted) {
    while (widths.reduce((a, b) => a + b, borders) > columns) {
      const widest = widths.indexOf(Math.max(...widths));
      if (widths[widest]! <= MIN_COLUMN) break; // as narrow as it goes: wider than the terminal, but readable
      widths[widest]!--;
    }
  }
  const table = new Table({
    head,
    style: { head: headStyle, border: [] },
    ...(fitted && { colWidths: widths, wordWrap: true, wrapOnWordBoundary: false }),
  });
  table.push(...cells);
  return table.toString();
}

/** A table for one item: a field per row; on a terminal, a long value wraps at its width rather than run past it. */
export function printRecord(record: Array<[string, string | number]>): void {
  printLine(formatRecord(record, process.stdout.isTTY ? process.stdout.columns : undefined));
}

/** printRecord's table, no wider than `columns` when given (a value's column keeps at least 20): values wrap mid-word,
 * as a urn has no spaces and a cut one would lose what it names. */
export function formatRecord(record: Array<[string, string | number]>, columns?: number): string {
  // a column's width counts its padding (1 each side); the three borders take one each
  const keyWidth = Math.max(0, ...record.map(([key]) => key.length)) + 2;
  const valueWidth = columns ? Math.max(20, columns - keyWidth - 3) : undefined;
  const table = new Table({
    style: { head: [], border: [] },
    ...(valueWidth !== undefined && { colWidths: [keyWidth, valueWidth], wordWrap: true, wrapOnWordBoundary: false }),
  });
  table.push(...record.map(([key, value]) => ({ [key]: String(value) })));
  return table.toString();
}

/** Epoch milliseconds as UTC text to the second, `-` for none. */
export function formatTime(ms: number | null | undefined): string {
  if (ms === null || ms === undefined) return "-";
  return new Date(ms)
    .toISOString()
    .replace("T", " ")
    .replace(/\.\d{3}Z$/, "Z");
}

export function formatCount(n: number): string {
  return n.toLocaleString("en-US");
}

/** Seconds as `1h 02m`, `3m 05s` or `12s`. */
export function formatDuration(seconds: number): string {
  if (!Number.isFinite(seconds) || seconds < 0) return "-";
  const s = Math.round(seconds);
  if (s >= 3600) return `${Math.floor(s / 3600)}h ${String(Math.floor((s % 3600) / 60)).padStart(2, "0")}m`;
  if (s >= 60) return `${Math.floor(s / 60)}m ${String(s % 60).padStart(2, "0")}s`;
  return `${s}s`;
}
