import { DEFINITION_LIMITS } from "./definition-limits";
import { compileRe2, RegexSyntaxError, type RE2 } from "./re2-engine";

/**
 * Compiled regular expressions, keyed by pattern: compiling costs far more than matching a typical rule (tens of
 * microseconds to milliseconds against a few), so batch evaluation compiles each pattern once. Least recently used
 * entries are evicted, and with them their lazy DFA's states (at most 8 MiB each: re2js starts a DFA over past that,
 * or runs its NFA).
 */
const MAX_ENTRIES = 256;
const cache = new Map<string, RE2>();

/**
 * Whether `pattern` finds a match in `text` (a search: anchor with ^…$ for a whole match). Patterns are RE2 in
 * Unicode mode, which reads JavaScript syntax (`\p{L}`, `(?<name>…)`, `\-`) and adds inline flags such as `(?i)`.
 * Only the first DEFINITION_LIMITS.regexSubjectLength characters of `text` are searched: RE2 is linear, but a
 * hostile pattern still costs a fraction of a microsecond to microseconds per character.
 */
export function regexMatches(pattern: string, text: string): boolean {
  const subject =
    text.length > DEFINITION_LIMITS.regexSubjectLength ? text.slice(0, DEFINITION_LIMITS.regexSubjectLength) : text;
  return compiled(pattern).test(subject);
}

/** Why `pattern` cannot run (its syntax, or a feature RE2 lacks such as backreferences), or undefined when it can. */
export function regexSyntaxError(pattern: string): string | undefined {
  try {
    compiled(pattern);
    return undefined;
  } catch (error) {
    if (error instanceof RegexSyntaxError) return error.reason;
    throw error;
  }
}

function compiled(pattern: string): RE2 {
  const hit = cache.get(pattern);
  if (hit) {
    // Re-inserted: Map order is then least recently used first.
    cache.delete(pattern);
    cache.set(pattern, hit);
    return hit;
  }
  const regex = compileRe2(pattern);
  if (cache.size >= MAX_ENTRIES) cache.delete(cache.keys().next().value!);
  cache.set(pattern, regex);
  return regex;
}
