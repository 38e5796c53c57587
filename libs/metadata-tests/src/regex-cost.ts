/**
 * An estimate of what compiling a pattern costs, read from the pattern's text without compiling it: RE2 compiles
 * synchronously on the caller's event loop, and in re2-wasm, the engine before re2js, legal patterns took seconds
 * (`(.{1,1000})` over a minute), so the cost has to be known before compiling. One unit is about one literal
 * character's worth of program, ~20 µs of re2-wasm on the reference machine; re2js compiles the same patterns 10–100×
 * faster (at most ~2 µs a unit, alternations; `\p{L}` 0.7 ms against 46), and the units and limits are kept as they
 * were measured, so that the same definitions are accepted and refused. Counted repetition copies what it repeats
 * (`x{n,m}` is max(n, m) copies, nested repeats multiply), and atoms that RE2 turns into many UTF-8 byte ranges weigh
 * what they were measured to cost: `.` or a negated class ~20 literals, `\p{L}` ~2,000. It over-estimates rather than
 * under-estimates: unknown syntax counts as a literal, a case-insensitive flag anywhere doubles every atom.
 */
export function regexCompileCost(pattern: string): number {
  const caseless = /\(\?[a-zA-Z]*i/.test(pattern) ? 2 : 1;
  // One frame per open group: `done` closed alternatives, `items` the current one's atoms, `last` the atom a
  // quantifier applies to (already in items).
  const frames: Array<{ done: number; items: number; last: number }> = [{ done: 0, items: 0, last: 0 }];
  let frame = frames[0]!;
  const atom = (weight: number): void => {
    frame.last = weight * caseless;
    frame.items += frame.last;
  };
  const repeat = (copies: number): void => {
    const repeated = frame.last * copies + 1;
    frame.items += repeated - frame.last;
    frame.last = repeated;
  };
  for (let index = 0; index < pattern.length; index++) {
    const char = pattern[index]!;
    if (char === "\\") {
      const [weight, length] = escapeCost(pattern, index + 1);
      atom(weight);
      index += length;
    } else if (char === "[") {
      const [weight, end] = classCost(pattern, index);
      atom(weight);
      index = end;
    } else if (char === "(") {
      // (?i) alone sets flags and is no group; (?:…), (?<n>…), (?P<n>…), (?i:…) open one.
      const flags = /^\(\?[a-zA-Z-]*\)/.exec(pattern.slice(index, index + 12));
      if (flags) {
        index += flags[0].length - 1;
        continue;
      }
      frames.push((frame = { done: 0, items: 0, last: 0 }));
    } else if (char === ")" && frames.length > 1) {
      const group = frames.pop()!;
      frame = frames[frames.length - 1]!;
      atom((group.done + group.items + 1) / caseless);
    } else if (char === "|") {
      // each alternative costs about two literals more (measured: (a|b|c|d) ~ 11)
      frame.done += frame.items + 2;
      frame.items = 0;
      frame.last = 0;
    } else if (char === "*" || char === "+" || char === "?") {
      repeat(1);
    } else if (char === "{") {
      const counted = /^\{(\d+)(,(\d*))?\}/.exec(pattern.slice(index, index + 24));
      if (counted) {
        const least = Number(counted[1]);
        const most = counted[2] === undefined ? least : counted[3] === "" ? least + 1 : Number(counted[3]);
        repeat(Math.max(least, most, 1));
        index += counted[0].length - 1;
      } else atom(1);
    } else if (char === "." || char === "^" || char === "$") {
      atom(char === "." ? ANY : 1);
    } else {
      atom(char.charCodeAt(0) < 0x80 ? 1 : 2);
    }
  }
  // Groups left open are a syntax error RE2 reports; count what they hold anyway.
  let cost = 0;
  for (const open of frames) cost += open.done + open.items;
  return cost + COMPILE_OVERHEAD;
}

/** Measured on re2-wasm in Unicode mode, in units of one ASCII literal (~20 µs there); see the header. */
const ANY = 20; // `.`, `[^a]`, `\W`, `\S`, `\D`: every code point but a few, as UTF-8 ranges
const UNICODE_PROPERTY = 2_000; // `\p{L}` ~40 ms, `\p{Lu}`/`\p{N}` ~28 ms, scripts less
const NON_ASCII_RANGE = 8; // a class range past U+007F, several UTF-8 byte sequences
const COMPILE_OVERHEAD = 25; // ~0.5 ms per compile whatever the pattern

const ESCAPE_WEIGHTS: Record<string, number> = { d: 1, w: 4, s: 4, b: 1, B: 1, D: ANY, W: ANY, S: ANY };

/** The weight of the escape whose letter is at `at`, and how many characters after the backslash it spans. */
function escapeCost(pattern: string, at: number): [number, number] {
  const letter = pattern[at];
  if (letter === undefined) return [1, 0];
  if (letter === "p" || letter === "P") {
    const braced = pattern[at + 1] === "{" ? pattern.indexOf("}", at + 1) : -1;
    return [UNICODE_PROPERTY, braced === -1 ? 2 : braced - at + 1];
  }
  if (letter === "Q") {
    // \Q…\E: literal text
    const end = pattern.indexOf("\\E", at + 1);
    const text = end === -1 ? pattern.slice(at + 1) : pattern.slice(at + 1, end);
    return [Math.max(1, text.length), (end === -1 ? pattern.length : end + 2) - at];
  }
  const hex = /^(x[0-9a-fA-F]{2}|x\{[0-9a-fA-F]+\}|u[0-9a-fA-F]{4}|u\{[0-9a-fA-F]+\})/.exec(pattern.slice(at, at + 12));
  if (hex) return [2, hex[0].length];
  return [ESCAPE_WEIGHTS[letter] ?? 1, 1];
}

/** The weight of the class opening at `start`, and the index of its closing `]`. */
function classCost(pattern: string, start: number): [number, number] {
  let index = start + 1;
  const negated = pattern[index] === "^";
  if (negated) index++;
  let weight = 1;
  // RE2 reads a `]` first in a class as a literal.
  for (let first = true; index < pattern.length; index++, first = false) {
    const char = pattern[index]!;
    if (char === "]" && !first) break;
    if (char === "\\") {
      const [escape, length] = escapeCost(pattern, index + 1);
      weight += escape;
      index += length;
    } else if (char === "[" && pattern[index + 1] === ":") {
      // [:alpha:], a POSIX class
      const end = pattern.indexOf(":]", index + 2);
      weight += 4;
      if (end !== -1) index = end + 1;
    } else if (pattern[index + 1] === "-" && pattern[index + 2] !== undefined && pattern[index + 2] !== "]") {
      weight += char.charCodeAt(0) >= 0x80 || pattern.charCodeAt(index + 2) >= 0x80 ? NON_ASCII_RANGE : 1;
      index += 2;
    } else {
      weight += char.charCodeAt(0) < 0x80 ? 1 : 2;
    }
  }
  return [negated ? Math.max(ANY, weight) : weight, index];
}
