/**
 * Compiled regular expressions, keyed by pattern. Definitions store patterns as strings (they are JSON); compiling
 * once per pattern instead of once per evaluation keeps batch evaluation cheap. Bounded so that a stream of distinct
 * patterns cannot grow memory without limit.
 */
const MAX_ENTRIES = 1000;
const cache = new Map<string, RegExp>();

/**
 * Patterns use JavaScript syntax in Unicode mode (so `\p{L}` means a letter rather than the text "p{L}"); a pattern
 * that only the legacy mode accepts (e.g. `\-` outside a class, common in Java-style patterns) is compiled that way.
 * Throws a SyntaxError for a pattern neither mode accepts.
 */
export function compileRegex(pattern: string): RegExp {
  let regex = cache.get(pattern);
  if (!regex) {
    regex = compile(pattern);
    if (cache.size >= MAX_ENTRIES) cache.clear();
    cache.set(pattern, regex);
  }
  return regex;
}

/** Why `pattern` does not compile, or undefined when it does. */
export function regexSyntaxError(pattern: string): string | undefined {
  try {
    compileRegex(pattern);
    return undefined;
  } catch (error) {
    // "Invalid regular expression: /(/: Unterminated group" -> "Unterminated group": the caller quotes the pattern.
    const message = error instanceof Error ? error.message : String(error);
    return message.replace(/^Invalid regular expression: \/.*\/[a-z]*: /s, "");
  }
}

function compile(pattern: string): RegExp {
  try {
    return new RegExp(pattern, "u");
  } catch {
    return new RegExp(pattern);
  }
}
