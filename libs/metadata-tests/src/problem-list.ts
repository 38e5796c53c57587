import type { DefinitionProblem } from "./test-definition.error";

/** Collects validation problems so that one pass over a definition reports all of them, not just the first. */
export class ProblemList {
  readonly problems: DefinitionProblem[] = [];
  /** regex_match patterns met so far: each costs a compilation, so the limit is enforced before compiling more */
  patterns = 0;
  /** their estimated compile cost so far (regexCompileCost), bounded before compiling the next */
  patternCost = 0;

  add(path: string, message: string): void {
    this.problems.push({ path, message });
  }

  get isEmpty(): boolean {
    return this.problems.length === 0;
  }
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** What a value is, in words, for "got …" in messages. */
export function describeValue(value: unknown): string {
  if (value === null) return "null";
  if (value === undefined) return "nothing";
  if (Array.isArray(value)) return "a list";
  if (typeof value === "object") return "an object";
  if (typeof value === "string") return `the string ${JSON.stringify(value)}`;
  return `${typeof value} ${String(value)}`;
}

/** Names keys for messages: 'a', 'b'. */
export function quoteKeys(keys: readonly string[]): string {
  return keys.map((key) => `'${key}'`).join(", ");
}
