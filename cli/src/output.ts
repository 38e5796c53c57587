import Table from "cli-table3";

/** What every command gets from the global options. */
export interface GlobalOptions {
  json?: boolean;
  wide?: boolean;
}

/** How tables print, from the global options (main.ts sets it before a command runs). */
const settings = { wide: false };

export function configureOutput(options: GlobalOptions): void {
  settings.wide = Boolean(options.wide);
}

/** `--json`: one JSON document on stdout, nothing else there. */
export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

export function printLine(line = ""): void {
  process.stdout.write(`${line}\n`);
}

/** Which columns a narrow terminal may shorten, and which it must keep. */
export interface FitOptions {
  /** columns of free text, cut with `…` to fit: a name, a description, a message */
  shorten?: string[];
  /** columns never left out (the first column always is kept): what the rows are */
  keep?: string[];
}

/**
 * A table for people: one row per item, each on one line. Plain (no colours) when stdout is not a terminal; on a
 * terminal no wider than it unless --wide: an id, a urn, a time or a number is shown whole or not at all (split
 * across lines, it could not be copied), so the free-text columns are cut first and then the columns at the right
 * left out, saying which (--wide shows them, --json has everything).
 */
export function printTable(head: string[], rows: Array<Array<string | number>>, options: FitOptions = {}): void {
  const tty = process.stdout.isTTY;
  const fitted = fitTable(head, rows, tty && !settings.wide ? process.stdout.columns : undefined, options);
  printLine(renderTable(fitted.head, fitted.rows, tty ? ["cyan"] : []));
  if (fitted.left.length > 0) printLine(`(${fitted.left.join(", ")} left out to fit the terminal: --wide shows them)`);
}

/** The narrowest a cut column gets, unless its head and cells are narrower. */
const MIN_CUT = 12;

const width = (text: string) => [...text].length;
const cut = (text: string, to: number) => (width(text) <= to ? text : `${[...text].slice(0, to - 1).join("")}…`);

export interface FittedTable {
  head: string[];
  rows: string[][];
  /** the heads of the columns left out */
  left: string[];
}

/**
 * printTable's columns and cells for a terminal `columns` wide (none: all, whole): the `shorten` columns are cut,
 * widest first, down to MIN_CUT; while that is not enough the rightmost column not kept is left out and the cuts are
 * measured again. A table whose kept columns alone are wider than the terminal is shown whole, wider than it.
 */
export function fitTable(
  head: string[],
  rows: Array<Array<string | number>>,
  columns: number | undefined,
  options: FitOptions = {},
): FittedTable {
  const cells = rows.map((row) => head.map((_, i) => String(row[i] ?? "")));
  const natural = head.map((h, i) => Math.max(width(h), ...cells.map((row) => width(row[i]!))));
  const all = { head, rows: cells, left: [] };
  if (columns === undefined) return all;
  const keep = new Set([head[0], ...(options.keep ?? [])]);
  const shorten = new Set(options.shorten ?? []);
  let shown = head.map((_, i) => i);
  // each column takes its cells' width, a space each side and a border; the table one border more
  const total = (widths: number[]) => widths.reduce((sum, w) => sum + w + 3, 1);
  for (;;) {
    const widths = shown.map((i) => natural[i]!);
    const floor = shown.map((i) =>
      shorten.has(head[i]!) ? Math.min(natural[i]!, Math.max(MIN_CUT, width(head[i]!))) : natural[i]!,
    );
    while (total(widths) > columns) {
      // the widest column that can still give a character
      let widest = -1;
      for (let k = 0; k < widths.length; k++) {
        if (widths[k]! > floor[k]! && (widest < 0 || widths[k]! > widths[widest]!)) widest = k;
      }
      if (widest < 0) break;
      widths[widest]!--;
    }
    const droppable = shown.filter((i) => !keep.has(head[i]!));
    if (total(widths) <= columns || droppable.length === 0) {
      return {
        head: shown.map((i) => head[i]!),
        rows: cells.map((row) => shown.map((i, k) => cut(row[i]!, widths[k]!))),
        left: head.filter((_, i) => !shown.includes(i)),
      };
    }
    const leave = droppable.at(-1)!;
    shown = shown.filter((i) => i !== leave);
  }
}

function renderTable(head: string[], rows: string[][], headStyle: string[]): string {
  const table = new Table({ head, style: { head: headStyle, border: [] } });
  table.push(...rows);
  return table.toString();
}

/** printTable's table as a string, fitted to `columns` when given (unit tests). */
export function formatTable(
  head: string[],
  rows: Array<Array<string | number>>,
  columns?: number,
  options: FitOptions = {},
): string {
  const fitted = fitTable(head, rows, columns, options);
  return renderTable(fitted.head, fitted.rows, []);
}

/**
 * A table for one item: a field per row. On a terminal (unless --wide) a long value wraps to the terminal's width, at
 * its spaces where it has some; an id or a urn is never split (the table gets wider than the terminal instead), as a
 * split one could not be copied.
 */
export function printRecord(record: Array<[string, string | number]>): void {
  printLine(formatRecord(record, process.stdout.isTTY && !settings.wide ? process.stdout.columns : undefined));
}

/** printRecord's table, its values wrapped to fit `columns` when given. */
export function formatRecord(record: Array<[string, string | number]>, columns?: number): string {
  const keyWidth = Math.max(0, ...record.map(([key]) => width(key)));
  // two columns: a space each side of each, three borders
  const valueWidth = columns === undefined ? undefined : Math.max(20, columns - keyWidth - 7);
  const table = new Table({ style: { head: [], border: [] } });
  table.push(
    ...record.map(([key, value]) => ({
      [key]: valueWidth === undefined ? String(value) : wrapText(String(value), valueWidth),
    })),
  );
  return table.toString();
}

/** A urn or a uuid: what a user copies to pass to the next command. */
const ID = /^(urn:\S+|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})[,;.]?$/i;

/**
 * Text in lines of at most `to` characters, broken at its spaces; a word longer than that is broken too (a long JSON
 * value), unless it is an id, which keeps a line of its own whatever its length.
 */
export function wrapText(text: string, to: number): string {
  if (width(text) <= to) return text;
  const lines: string[] = [];
  let line = "";
  const add = (word: string) => {
    if (line && width(line) + 1 + width(word) > to) {
      lines.push(line);
      line = word;
    } else {
      line = line ? `${line} ${word}` : word;
    }
  };
  for (const word of text.split(" ")) {
    if (width(word) <= to || ID.test(word)) {
      add(word);
      continue;
    }
    const chars = [...word];
    for (let at = 0; at < chars.length; at += to) add(chars.slice(at, at + to).join(""));
  }
  lines.push(line);
  return lines.join("\n");
}

/** Epoch milliseconds as UTC text to the second, `-` for none. */
export function formatTime(ms: number | null | undefined): string {
  if (ms === null || ms === undefined) return "-";
  return new Date(ms)
    .toISOString()
    .replace("T", " ")
    .replace(/\.\d{3}Z$/, "Z");
}

/** A count as every output of mdp writes one: `1,500`. */
export function formatCount(n: number): string {
  return n.toLocaleString("en-US");
}

/** A count and its noun, agreeing: `1 partition`, `2 partitions`, `1,500 rows`. */
export function counted(n: number, singular: string, plural = `${singular}s`): string {
  return `${formatCount(n)} ${n === 1 ? singular : plural}`;
}

/**
 * truncateTimeseriesAspect's report, DataHub's sentence (`Delete 1500 out of 2500 rows …`), with its counts written
 * as the rest of the output writes them; --json keeps the server's text as it is.
 */
export function reportText(report: string): string {
  return report.replace(
    /^Delete (\d+) out of (\d+) rows/,
    (_, deleted: string, total: string) =>
      `Delete ${formatCount(Number(deleted))} out of ${formatCount(Number(total))} rows`,
  );
}

/** Seconds as `1h 02m`, `3m 05s` or `12s`. */
export function formatDuration(seconds: number): string {
  if (!Number.isFinite(seconds) || seconds < 0) return "-";
  const s = Math.round(seconds);
  if (s >= 3600) return `${Math.floor(s / 3600)}h ${String(Math.floor((s % 3600) / 60)).padStart(2, "0")}m`;
  if (s >= 60) return `${Math.floor(s / 60)}m ${String(s % 60).padStart(2, "0")}s`;
  return `${s}s`;
}
