/**
 * Reading the commands a document gives out of its markdown, so that a test runs what the docs say rather than a copy
 * of it: a section's fenced code blocks, each `sh` block split into its shell commands with the line each starts on,
 * and the answer the document shows for a command (a `# {…}` comment right below it, or a ```json block right after
 * its block), read as a pattern in which `…` stands for what the document leaves out.
 */
import { readFileSync } from "node:fs";

export interface DocCommand {
  /** "docs/api.md:108": where the command starts */
  where: string;
  /** the command as written, continuation lines and all */
  text: string;
  /** the same without its comments: what a placeholder may stand in */
  code: string;
  /** the answer the document shows, as written, if any */
  answer?: string;
}

interface Fence {
  lang: string;
  /** 1-based line of the first line inside the fence */
  line: number;
  lines: string[];
}

/** The fenced blocks of the section under `heading` (up to the next heading of its level or above), in order. */
export function sectionFences(markdown: string, heading: string): Fence[] {
  const lines = markdown.split("\n");
  const level = /^#+/.exec(heading)?.[0].length ?? 0;
  const fences: Fence[] = [];
  let inSection = false;
  let open: Fence | undefined;
  for (const [index, line] of lines.entries()) {
    if (open) {
      if (/^```\s*$/.test(line)) {
        if (inSection) fences.push(open);
        open = undefined;
      } else open.lines.push(line);
      continue;
    }
    const fenceMatch = /^```(\w*)\s*$/.exec(line);
    if (fenceMatch) {
      open = { lang: fenceMatch[1]!, line: index + 2, lines: [] };
      continue;
    }
    const headingMatch = /^(#+) /.exec(line);
    if (headingMatch) {
      if (line.trim() === heading) inSection = true;
      else if (inSection && headingMatch[1]!.length <= level) break;
    }
  }
  if (!inSection) throw new Error(`no section '${heading}'`);
  return fences;
}

/**
 * Splits a shell block into commands: a command goes on past a line ending in `\` or inside an open quote; a `#` that
 * starts a word outside quotes begins a comment. A comment line of JSON (`# {` or `# [`) right below a command is its
 * answer; other comment lines and blank lines are prose.
 */
export function shellCommands(fence: Fence, file: string): DocCommand[] {
  const commands: DocCommand[] = [];
  let current: { line: number; lines: string[]; code: string[] } | undefined;
  let quote: "'" | '"' | undefined;
  let last: DocCommand | undefined;
  for (const [offset, line] of fence.lines.entries()) {
    if (!current) {
      const trimmed = line.trim();
      if (trimmed === "") {
        last = undefined;
        continue;
      }
      if (trimmed.startsWith("#")) {
        if (last && /^# [[{]/.test(trimmed) && last.answer === undefined) last.answer = trimmed.slice(2);
        else last = undefined;
        continue;
      }
      current = { line: fence.line + offset, lines: [], code: [] };
    }
    current.lines.push(line);
    let continued = false;
    let codeEnd = line.length;
    for (let i = 0; i < line.length; i++) {
      const char = line[i]!;
      if (quote === "'") {
        if (char === "'") quote = undefined;
      } else if (char === "\\") {
        if (i === line.length - 1) continued = true;
        i++;
      } else if (quote === '"') {
        if (char === '"') quote = undefined;
      } else if (char === "'" || char === '"') quote = char;
      else if (char === "#" && (i === 0 || /\s/.test(line[i - 1]!))) {
        codeEnd = i;
        break;
      }
    }
    current.code.push(codeEnd < line.length ? line.slice(0, codeEnd).trimEnd() : line);
    if (quote || continued) continue;
    last = { where: `${file}:${current.line}`, text: current.lines.join("\n"), code: current.code.join("\n") };
    commands.push(last);
    current = undefined;
  }
  if (current) throw new Error(`${file}:${current.line}: the command never ends (an open quote?)`);
  return commands;
}

/**
 * The commands of a section's `sh` blocks in document order, each with the answer the document shows: a ```json block
 * right after an `sh` block (only blank lines between) is the answer of that block's last command.
 */
export function documentedCommands(root: string, file: string, heading: string): DocCommand[] {
  const markdown = readFileSync(`${root}/${file}`, "utf8");
  const fences = sectionFences(markdown, heading);
  const commands: DocCommand[] = [];
  const lines = markdown.split("\n");
  fences.forEach((fence, index) => {
    if (fence.lang === "sh") commands.push(...shellCommands(fence, file));
    else if (fence.lang === "json" && index > 0 && fences[index - 1]!.lang === "sh") {
      const previous = fences[index - 1]!;
      const between = lines.slice(previous.line + previous.lines.length, fence.line - 2);
      const lastCommand = commands.at(-1);
      if (between.every((line) => line.trim() === "") && lastCommand && lastCommand.answer === undefined)
        lastCommand.answer = fence.lines.join("\n");
    }
  });
  return commands;
}

/** The fenced block of `lang` that follows the first line containing `marker` in `file`. */
export function fenceAfter(root: string, file: string, marker: string, lang: string): string {
  const lines = readFileSync(`${root}/${file}`, "utf8").split("\n");
  const start = lines.findIndex((line) => line.includes(marker));
  if (start < 0) throw new Error(`${file}: no line containing '${marker}'`);
  const open = lines.findIndex((line, i) => i > start && line.trim() === "```" + lang);
  const close = lines.findIndex((line, i) => i > open && line.trim() === "```");
  if (open < 0 || close < 0) throw new Error(`${file}: no \`\`\`${lang} block after '${marker}'`);
  return lines.slice(open + 1, close).join("\n") + "\n";
}

/** A documented answer: JSON in which `…` stands for left-out members, items or characters. */
export type Pattern =
  | { kind: "object"; members: Array<[string, Pattern]>; open: boolean }
  | { kind: "array"; items: Pattern[]; open: boolean }
  | { kind: "value"; value: string | number | boolean | null };

const ELLIPSIS = "…";

export function parsePattern(text: string): Pattern {
  let at = 0;
  const fail = (what: string): never => {
    throw new Error(`documented answer: ${what} at ${at}: ${text.slice(Math.max(0, at - 20), at + 20)}`);
  };
  const space = () => {
    while (/\s/.test(text[at] ?? "")) at++;
  };
  const ellipsis = () => {
    space();
    if (text.startsWith(ELLIPSIS, at)) {
      at += ELLIPSIS.length;
      space();
      return true;
    }
    return false;
  };
  const string = (): string => {
    const start = at;
    if (text[at] !== '"') fail("expected a string");
    at++;
    while (text[at] !== '"') {
      if (at >= text.length) fail("unterminated string");
      at += text[at] === "\\" ? 2 : 1;
    }
    at++;
    return JSON.parse(text.slice(start, at)) as string;
  };
  const value = (): Pattern => {
    space();
    const char = text[at];
    if (char === "{" || char === "[") {
      at++;
      const close = char === "{" ? "}" : "]";
      const members: Array<[string, Pattern]> = [];
      const items: Pattern[] = [];
      let open = false;
      space();
      while (text[at] !== close) {
        if (ellipsis()) open = true;
        else if (char === "{") {
          space();
          const key = string();
          space();
          if (text[at++] !== ":") fail("expected ':'");
          members.push([key, value()]);
        } else items.push(value());
        space();
        if (text[at] === ",") at++;
        else if (text[at] !== close) fail(`expected ',' or '${close}'`);
        space();
      }
      at++;
      return char === "{" ? { kind: "object", members, open } : { kind: "array", items, open };
    }
    if (char === '"') return { kind: "value", value: string() };
    const literal = /^(-?\d+(\.\d+)?([eE][+-]?\d+)?|true|false|null)/.exec(text.slice(at));
    if (!literal) return fail("expected a value");
    at += literal[0].length;
    return { kind: "value", value: JSON.parse(literal[0]) as number | boolean | null };
  };
  const pattern = value();
  space();
  if (at !== text.length) fail("trailing text");
  return pattern;
}

/** What changes from run to run: only its type is compared. */
const VOLATILE_KEYS = new Set(["accessToken", "id", "taskId", "expiresAt", "time", "createdVia", "evaluatedAt"]);
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

const wildcard = (text: string) =>
  new RegExp(
    `^${text
      .split(ELLIPSIS)
      .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"))
      .join(".*")}$`,
    "s",
  );

const typeOf = (value: unknown) => (value === null ? "null" : Array.isArray(value) ? "array" : typeof value);

/**
 * Where `actual` differs from the documented pattern, as "path: …" lines (none: it matches). An object without `…`
 * lists every member; an array without `…` every item, in order (with `…`: its first items). A string holding `…`
 * matches any text there; a uuid matches any uuid; the members in VOLATILE_KEYS only need the same type.
 */
export function mismatches(pattern: Pattern, actual: unknown, path = "$", key = ""): string[] {
  if (VOLATILE_KEYS.has(key) && pattern.kind === "value") {
    return typeOf(actual) === typeOf(pattern.value)
      ? []
      : [`${path}: a ${typeOf(pattern.value)}, got ${JSON.stringify(actual)}`];
  }
  if (pattern.kind === "value") {
    const expected = pattern.value;
    if (typeof expected === "string" && typeof actual === "string") {
      if (expected.includes(ELLIPSIS) && wildcard(expected).test(actual)) return [];
      if (UUID.test(expected) && UUID.test(actual)) return [];
    }
    return actual === expected ? [] : [`${path}: expected ${JSON.stringify(expected)}, got ${JSON.stringify(actual)}`];
  }
  if (pattern.kind === "array") {
    if (!Array.isArray(actual)) return [`${path}: expected an array, got ${JSON.stringify(actual)}`];
    const lengthOk = pattern.open ? actual.length >= pattern.items.length : actual.length === pattern.items.length;
    if (!lengthOk)
      return [
        `${path}: expected ${pattern.open ? "at least " : ""}${pattern.items.length} items, got ${JSON.stringify(actual)}`,
      ];
    return pattern.items.flatMap((item, i) => mismatches(item, actual[i], `${path}[${i}]`));
  }
  if (typeOf(actual) !== "object") return [`${path}: expected an object, got ${JSON.stringify(actual)}`];
  const object = actual as Record<string, unknown>;
  const problems: string[] = [];
  const seen = new Set<string>();
  for (const [name, member] of pattern.members) {
    const found = name.includes(ELLIPSIS) ? Object.keys(object).find((k) => wildcard(name).test(k)) : name;
    if (found === undefined || !(found in object)) {
      problems.push(`${path}: no member ${JSON.stringify(name)} (has ${Object.keys(object).join(", ")})`);
      continue;
    }
    seen.add(found);
    problems.push(...mismatches(member, object[found], `${path}.${found}`, found));
  }
  const extra = Object.keys(object).filter((k) => !seen.has(k));
  if (!pattern.open && extra.length) problems.push(`${path}: members the docs do not show: ${extra.join(", ")}`);
  return problems;
}

/** The info strings of the blocks a reader runs: shell commands and JavaScript. */
export const RUNNABLE_LANGS = new Set(["sh", "bash", "shell", "js", "javascript"]);

/**
 * The last line before a fence (blank lines aside) that keeps its block from being run (docs/api.md, "Examples that
 * run"): `<!-- example: not run: <why> -->`.
 */
const NOT_RUN = /^<!--\s*example:\s*not run:\s*(.*?)\s*-->\s*$/;

export interface DocExample extends Fence {
  file: string;
  /** "docs/api.md:132 curl -s localhost:8080/…": where the block starts and its first line, as a failure names it */
  title: string;
  /** why it is not run, when the marker before its fence says so */
  notRun?: string;
  /** a `sh`/`bash`/`shell` block's commands, with the answers shown for them */
  commands: DocCommand[];
}

/**
 * Every fenced block of `file` in document order, each runnable one (RUNNABLE_LANGS) with its commands and the reason
 * it is not run, if any. A ```json block right after a shell block (only blank lines between) is the answer of that
 * block's last command. A not-run marker before any other block is an error: it would say nothing.
 */
export function fileExamples(root: string, file: string): { examples: DocExample[]; fences: Fence[] } {
  const lines = readFileSync(`${root}/${file}`, "utf8").split("\n");
  const fences: Array<Fence & { notRun?: string }> = [];
  let open: (Fence & { notRun?: string }) | undefined;
  for (const [index, line] of lines.entries()) {
    if (open) {
      if (/^\s*```\s*$/.test(line)) {
        fences.push(open);
        open = undefined;
      } else open.lines.push(line);
      continue;
    }
    const fenceMatch = /^\s*```(\S*)/.exec(line);
    if (!fenceMatch) continue;
    open = { lang: fenceMatch[1]!, line: index + 2, lines: [] };
    let before = index - 1;
    while (before >= 0 && lines[before]!.trim() === "") before--;
    const marker = NOT_RUN.exec(lines[before] ?? "");
    if (marker) {
      if (!RUNNABLE_LANGS.has(open.lang))
        throw new Error(`${file}:${index}: a not-run marker before a ${open.lang || "plain"} block`);
      if (!marker[1]) throw new Error(`${file}:${index}: a not-run marker must say why`);
      open.notRun = marker[1];
    }
  }
  if (open) throw new Error(`${file}:${open.line - 1}: a fence never closed`);
  const examples: DocExample[] = [];
  fences.forEach((fence, index) => {
    const isShell = ["sh", "bash", "shell"].includes(fence.lang);
    if (RUNNABLE_LANGS.has(fence.lang)) {
      const first = fence.lines.find((l) => l.trim() !== "" && !l.trim().startsWith("#") && !l.trim().startsWith("//"));
      examples.push({
        ...fence,
        file,
        title: `${file}:${fence.line - 1} ${(first ?? fence.lines[0] ?? "").trim().slice(0, 90)}`,
        commands: isShell ? shellCommands(fence, file) : [],
      });
    }
    const previous = fences[index - 1];
    const lastExample = examples.at(-1);
    if (fence.lang === "json" && previous && ["sh", "bash", "shell"].includes(previous.lang) && lastExample) {
      const between = lines.slice(previous.line + previous.lines.length, fence.line - 2);
      const lastCommand = lastExample.commands.at(-1);
      if (between.every((l) => l.trim() === "") && lastCommand && lastCommand.answer === undefined)
        lastCommand.answer = fence.lines.join("\n");
    }
  });
  return { examples, fences };
}
