import { AppError } from "@mdp/core";
import { DEFINITION_LIMITS } from "./definition-limits";
import { discardEngine, isEngineAbort, re2Engine, type RE2 } from "./re2-engine";

/**
 * Compiled regular expressions, keyed by pattern: compiling RE2 costs about a millisecond, matching a typical rule a
 * few microseconds, so batch evaluation compiles each pattern once. Least recently used entries are evicted and their
 * WebAssembly objects freed (nothing else frees them, and the engine's heap is 16 MiB in all).
 */
const MAX_ENTRIES = 256;
const cache = new Map<string, { regex: RE2; generation: number }>();

/**
 * Whether `pattern` finds a match in `text` (a search: anchor with ^…$ for a whole match). Patterns are RE2 in
 * Unicode mode, which reads JavaScript syntax (`\p{L}`, `(?<name>…)`, `\-`) and adds inline flags such as `(?i)`.
 * Only the first DEFINITION_LIMITS.regexSubjectLength characters of `text` are searched: RE2 is linear, but in
 * WebAssembly a hostile pattern costs tens of microseconds per character.
 */
export function regexMatches(pattern: string, text: string): boolean {
  const subject =
    text.length > DEFINITION_LIMITS.regexSubjectLength ? text.slice(0, DEFINITION_LIMITS.regexSubjectLength) : text;
  return withEngine(pattern, (regex) => regex.test(subject));
}

/** Why `pattern` cannot run (its syntax, or a feature RE2 lacks such as backreferences), or undefined when it can. */
export function regexSyntaxError(pattern: string): string | undefined {
  try {
    withEngine(pattern, () => undefined);
    return undefined;
  } catch (error) {
    if (error instanceof AppError) return `it ${TOO_BIG}`;
    // "Invalid regular expression: /(a)\1/u: invalid escape sequence: \1" -> the reason; the caller quotes the pattern.
    const message = String((error as { message?: unknown } | null)?.message ?? error);
    return message.replace(/^Invalid regular expression: \/.*\/[a-z]*: /s, "");
  }
}

/**
 * Runs `use` on the compiled pattern. When the engine aborts (out of its heap), the instance is replaced, the cache
 * emptied (its objects belonged to that instance) and `use` tried once more with the pattern alone in a fresh heap;
 * a pattern that aborts even then is refused by name.
 */
const TOO_BIG = "needs more memory than the regex engine's 16 MiB heap";

function withEngine<T>(pattern: string, use: (regex: RE2) => T): T {
  for (let attempt = 1; ; attempt++) {
    const { RE2, generation } = re2Engine();
    try {
      return use(compiled(pattern, RE2, generation));
    } catch (error) {
      if (!isEngineAbort(error)) throw error;
      discardEngine(generation);
      cache.clear();
      if (attempt === 2) {
        throw new AppError("BAD_USER_INPUT", `The regular expression ${JSON.stringify(pattern)} ${TOO_BIG}`);
      }
    }
  }
}

function compiled(pattern: string, RE2: typeof import("re2-wasm").RE2, generation: number): RE2 {
  const hit = cache.get(pattern);
  if (hit && hit.generation === generation) {
    // Re-inserted: Map order is then least recently used first.
    cache.delete(pattern);
    cache.set(pattern, hit);
    return hit.regex;
  }
  const regex = new RE2(pattern, "u");
  if (cache.size >= MAX_ENTRIES) {
    const [oldest] = cache;
    if (oldest) {
      cache.delete(oldest[0]);
      free(oldest[1].regex);
    }
  }
  cache.set(pattern, { regex, generation });
  return regex;
}

// re2-wasm keeps the Emscripten object in a private field and never deletes it; deleting is what returns its memory.
function free(regex: RE2): void {
  (regex as unknown as { wrapper?: { delete?: () => void } }).wrapper?.delete?.();
}
