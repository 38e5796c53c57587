import type { RequestHandler } from "express";
import { badInput } from "@mdp/core";

/**
 * Bounds on a GraphQL document's text, checked before anything parses it (type-aliases.ts, then Apollo), so that what
 * parsing and validation can cost is known before they start. What the parsed document may select is in
 * query-limits.ts, what executing it may cost in query-cost.ts.
 */

/** UTF-8 bytes of the query text; variables are bounded by the HTTP body limit only, they are not parsed as GraphQL. */
export const MAX_DOCUMENT_BYTES = 100 * 1024;
/**
 * Lexical tokens, counted by graphql-js' parser itself (Apollo's parseOptions.maxTokens): one parse, aborted at the
 * limit. The standard introspection query is 183 tokens; DataHub's web app sends a few hundred.
 */
export const MAX_TOKENS = 2000;
/**
 * `{`, `[` and `(` open at once. graphql-js' parser is recursive: a document nested a few thousand levels deep (well
 * within the token limit for `[[[[…`) overflows the stack inside parse. The standard introspection query reaches 12.
 */
export const MAX_NESTING = 64;

export const PARSE_OPTIONS = { maxTokens: MAX_TOKENS } as const;

/**
 * How deeply brackets nest in a document, strings and comments skipped; stops counting past `limit`. One pass over the
 * text, no recursion, no allocation.
 */
export function nestingOf(text: string, limit: number): number {
  let depth = 0;
  let deepest = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x7b || c === 0x5b || c === 0x28) {
      // { [ (
      if (++depth > deepest) {
        deepest = depth;
        if (deepest > limit) return deepest;
      }
    } else if (c === 0x7d || c === 0x5d || c === 0x29) {
      // } ] ) — unbalanced text is the parser's to report
      if (depth > 0) depth--;
    } else if (c === 0x23) {
      // # comment, to the end of the line
      while (i + 1 < text.length && text.charCodeAt(i + 1) !== 0x0a && text.charCodeAt(i + 1) !== 0x0d) i++;
    } else if (c === 0x22) {
      i = text.startsWith('"""', i) ? endOfBlockString(text, i + 3) : endOfString(text, i + 1);
    }
  }
  return deepest;
}

/** Index of the closing quote of a "…" string opened before `from` (or the end of its line / of the text). */
function endOfString(text: string, from: number): number {
  for (let i = from; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x5c)
      i++; // backslash escapes the next character
    else if (c === 0x22 || c === 0x0a || c === 0x0d) return i;
  }
  return text.length;
}

/** Index of the last quote of a """…""" block string opened before `from`; \""" does not close it. */
function endOfBlockString(text: string, from: number): number {
  for (let i = from; i < text.length; i++) {
    if (text.charCodeAt(i) === 0x5c && text.startsWith('"""', i + 1)) i += 3;
    else if (text.startsWith('"""', i)) return i + 2;
  }
  return text.length;
}

/**
 * Refuses a query text over MAX_DOCUMENT_BYTES or nested past MAX_NESTING with a 400 naming the limit, before it is
 * parsed. The token limit is the parser's own (PARSE_OPTIONS), so a document is lexed once.
 */
export const refuseOversizedDocuments: RequestHandler = (req, _res, next) => {
  const query = (req.body as { query?: unknown } | undefined)?.query;
  if (typeof query !== "string") return next(); // Apollo answers a missing or non-string query itself
  // A UTF-8 character is at most 3 bytes per UTF-16 unit: most texts are judged without counting.
  if (query.length * 3 > MAX_DOCUMENT_BYTES) {
    const bytes = Buffer.byteLength(query, "utf8");
    if (bytes > MAX_DOCUMENT_BYTES) {
      throw badInput(`The GraphQL document is ${bytes} bytes; the limit is ${MAX_DOCUMENT_BYTES}.`);
    }
  }
  const nesting = nestingOf(query, MAX_NESTING);
  if (nesting > MAX_NESTING) {
    throw badInput(
      `The GraphQL document nests brackets more than ${MAX_NESTING} levels deep; the limit is ${MAX_NESTING}.`,
    );
  }
  next();
};
