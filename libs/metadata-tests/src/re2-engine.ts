import { RE2JS } from "re2js";

/**
 * RE2 for regex_match: re2js, the JavaScript port of RE2/J (pure JavaScript: no native build, no WebAssembly), runs
 * every pattern in time linear in the subject, so no pattern a test author writes can hold an event loop the way
 * backtracking `^(a+)+$` does. Patterns are read as they were by re2-wasm, the engine before it, so that every stored
 * definition means what it meant: JavaScript syntax in Unicode mode translated to RE2's (`translateRegExp`, re2-wasm's
 * own rules), and a refusal worded as RE2 words it (`invalid escape sequence: \1`), which is what a 400 quotes.
 */
export type RE2 = RE2JS;

/** A pattern RE2 cannot run; `reason` is RE2's wording, e.g. `missing ): (unclosed`. */
export class RegexSyntaxError extends Error {
  override readonly name = "RegexSyntaxError";
  constructor(readonly reason: string) {
    super(reason);
  }
}

/** Compiles `pattern` (JavaScript syntax, Unicode mode); throws RegexSyntaxError when RE2 refuses it. */
export function compileRe2(pattern: string): RE2 {
  const translated = translateRegExp(pattern);
  try {
    return RE2JS.compile(translated);
  } catch (error) {
    const refused = refusalOf(error);
    if (refused.description !== "duplicate capture group name") throw new RegexSyntaxError(re2Reason(refused));
    // RE2 reported a duplicate name only once the pattern had parsed, so any other error comes first: the pattern is
    // parsed again with its names made unique, and the error quotes it with its own names back.
    const names: string[] = [];
    try {
      RE2JS.compile(translated.replace(/\(\?P<(\w+)>/g, (_, name: string) => `(?P<g${names.push(name)}>`));
    } catch (other) {
      const { description, input } = refusalOf(other);
      const quoted = input.replace(/\(\?P<g(\d+)>/g, (_, index: string) => `(?P<${names[Number(index) - 1]}>`);
      throw new RegexSyntaxError(re2Reason({ description, input: quoted }));
    }
    throw new RegexSyntaxError("Duplicate capture group name");
  }
}

/** RE2/J's description of a refusal and the part of the pattern it names; anything else is rethrown. */
function refusalOf(error: unknown): { description: string; input: string } {
  const { error: description, input } = (error ?? {}) as { error?: unknown; input?: unknown };
  if (typeof description !== "string") throw error;
  return { description, input: typeof input === "string" ? input : "" };
}

/** RE2/J's descriptions of a refusal, as RE2 (C++) words them; RE2/J names the same part of the pattern. */
const RE2_WORDING: Record<string, string> = {
  "missing closing )": "missing )",
  "missing closing ]": "missing ]",
  "invalid or unsupported Perl syntax": "invalid perl operator",
  "invalid repeat count": "invalid repetition size",
  "invalid nested repetition operator": "bad repetition operator",
  "missing argument to repetition operator": "no argument for repetition operator",
  "invalid named capture": "invalid named capture group",
};

function re2Reason({ description, input }: { description: string; input: string }): string {
  if (description === "trailing backslash at end of expression") return "trailing \\";
  // Lookbehind reaches RE2 as `(?<=`/`(?<!` (the translation leaves them be), which RE2/J reads as a named group.
  if (description === "invalid named capture" && /^\(\?<[=!]/.test(input)) return "invalid perl operator: (?<";
  const worded = RE2_WORDING[description] ?? description;
  return input === "" ? worded : `${worded}: ${input}`;
}

const ALPHA_UPPER = "ABCDEFGHIJKLMNOPQRSTUVWXYZ";
const HEX = "0123456789ABCDEF";
const isHex = (char: string | undefined) => char !== undefined && HEX.includes(char.toUpperCase());

/**
 * JavaScript syntax to RE2's, by re2-wasm's rules (its `translateRegExp` and `escapeRegExp`): `\uXXXX`/`\u{X}` as
 * `\x{…}`, `\cX` as its control character, `(?<name>` as `(?P<name>`, `/` escaped; anything else as written.
 */
function translateRegExp(pattern: string): string {
  if (pattern === "") return "(?:)";
  const out: string[] = [];
  for (let i = 0; i < pattern.length;) {
    const char = pattern[i]!;
    if (char === "\\" && i + 1 < pattern.length) {
      const next = pattern[i + 1]!;
      i += 2;
      if (next === "c" && i < pattern.length) {
        // re2-wasm's own arithmetic, kept: anything but an uppercase letter gives \x00.
        const code = ALPHA_UPPER.indexOf(pattern[i]!) + 1;
        out.push("\\x", HEX[Math.floor(code / 16)]!, HEX[code % 16]!);
        i += 1;
      } else if (next === "u" && isHex(pattern[i])) {
        let digits = "";
        while (digits.length < 4 && isHex(pattern[i])) digits += pattern[i++];
        out.push(`\\x{${digits}}`);
      } else if (next === "u" && pattern[i] === "{") {
        out.push("\\x");
      } else {
        out.push("\\", next);
      }
    } else if (char === "/") {
      out.push("\\/");
      i += 1;
    } else if (pattern.startsWith("(?<", i) && pattern[i + 3] !== "=" && pattern[i + 3] !== "!") {
      out.push("(?P<");
      i += 3;
    } else {
      out.push(char);
      i += 1;
    }
  }
  return out.join("");
}
