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

/** A table for people: one row per item. Plain (no colours) when stdout is not a terminal. */
export function printTable(head: string[], rows: Array<Array<string | number>>): void {
  const table = new Table({ head, style: { head: process.stdout.isTTY ? ["cyan"] : [], border: [] } });
  table.push(...rows.map((row) => row.map((cell) => String(cell))));
  printLine(table.toString());
}

/** A table for one item: a field per row. */
export function printRecord(record: Array<[string, string | number]>): void {
  const table = new Table({ style: { head: [], border: [] } });
  table.push(...record.map(([key, value]) => ({ [key]: String(value) })));
  printLine(table.toString());
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
