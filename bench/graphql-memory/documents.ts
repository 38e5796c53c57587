/**
 * The request bodies of bench/graphql-memory. Both kinds select the same thing, listAccessTokens under a few aliases,
 * and come out at 1–5 KB; they differ in where the values are:
 *
 * - uniqueTextBody: inlined in the query text, as clients that build query strings do. Every request is a new
 *   document (new alias names, filter values, page numbers and field order), so the gateway parses, validates and
 *   caches each one. Each stays within docs/limits.md "GraphQL documents": at most 12 aliases (limit 15), under 900
 *   tokens (2,000), depth 3 (12), cost under 200 (5,000), 5 KB of text (100 KiB).
 * - repeatedDocumentBody: one document, the same text every time, with the same kind of values in its variables.
 */
import { randomBytes, randomInt } from "node:crypto";

export const MIN_DOCUMENT_BYTES = 1000;
export const MAX_DOCUMENT_BYTES = 5000;
const MAX_ALIASES = 12;

/** The fields of AccessTokenMetadata a page selects; each document picks some of them, in an order of its own. */
const TOKEN_FIELDS = [
  "urn",
  "id",
  "name",
  "description",
  "actorUrn",
  "ownerUrn",
  "createdAt",
  "expiresAt",
  "lastUsedAt",
];

/** Lower-case letters and digits: valid in a corpuser urn's id, a token name and an alias (after a letter). */
function word(length: number): string {
  return randomBytes(Math.ceil((length * 3) / 4) + 3)
    .toString("base64url")
    .replace(/[^a-zA-Z0-9]/g, "x")
    .toLowerCase()
    .slice(0, length);
}

function someFieldsShuffled(): string[] {
  const fields = [...TOKEN_FIELDS];
  for (let i = fields.length - 1; i > 0; i--) {
    const j = randomInt(i + 1);
    [fields[i], fields[j]] = [fields[j]!, fields[i]!];
  }
  return fields.slice(0, 3 + randomInt(fields.length - 2));
}

/** Where a document's values go: inlined into the text, or declared as variables. */
interface Values {
  actor: string;
  names: [string, string];
  start: number;
  count: number;
}

/** One aliased listAccessTokens; two filter shapes only, so the gateway's prepared list statements stay few. */
function selection(alias: string, v: Values | { variable: number }, fields: readonly string[]): string {
  const arg =
    "variable" in v
      ? `{start: $start${v.variable}, count: $count${v.variable}, filters: [{field: "actorUrn", value: $actor${v.variable}}, {field: "name", values: $names${v.variable}}]}`
      : `{start: ${v.start}, count: ${v.count}, filters: [{field: "actorUrn", value: "${v.actor}"}, {field: "name", values: ["${v.names[0]}", "${v.names[1]}"]}]}`;
  return `  ${alias}: listAccessTokens(input: ${arg}) {\n    total\n    count\n    tokens { ${fields.join(" ")} }\n  }`;
}

function values(valueLength: number): Values {
  return {
    actor: `urn:li:corpuser:${word(valueLength)}`,
    names: [word(valueLength), word(valueLength)],
    start: randomInt(10_000),
    count: 1 + randomInt(5),
  };
}

/** A request of its own: a new document whose values are in its text, between MIN and MAX_DOCUMENT_BYTES. */
export function uniqueTextBody(): { body: string; documentBytes: number } {
  const aliases = 2 + randomInt(MAX_ALIASES - 1);
  const target = MIN_DOCUMENT_BYTES + randomInt(MAX_DOCUMENT_BYTES - MIN_DOCUMENT_BYTES);
  // ~260 bytes of each selection are not values; its three values share the rest of its part of the target.
  const valueLength = Math.max(8, Math.min(150, Math.floor((target / aliases - 260) / 3)));
  const prefix = `q${word(6)}`;
  const selections = Array.from({ length: aliases }, (_, i) =>
    selection(`${prefix}_${i}`, values(valueLength), someFieldsShuffled()),
  );
  let query = `query {\n${selections.join("\n")}\n}`;
  // The rounding above can leave a small document short of the minimum: a longer last page number would not do (it
  // must stay an Int), so pad with a comment, which the parser skips but the text, the hash and the cache all carry.
  if (query.length < MIN_DOCUMENT_BYTES) query += `\n# ${word(MIN_DOCUMENT_BYTES - query.length)}`;
  if (query.length > MAX_DOCUMENT_BYTES) return uniqueTextBody();
  return { body: JSON.stringify({ query }), documentBytes: query.length };
}

const REPEATED_ALIASES = 7;
const REPEATED_VALUE_LENGTH = 30;
const repeatedFields = TOKEN_FIELDS.slice(0, 6);
/** The one document of the floor: the same selections with every value a variable. */
export const REPEATED_DOCUMENT = [
  `query Page(${Array.from(
    { length: REPEATED_ALIASES },
    (_, i) => `$start${i}: Int!, $count${i}: Int!, $actor${i}: String!, $names${i}: [String!]!`,
  ).join(", ")}) {`,
  ...Array.from({ length: REPEATED_ALIASES }, (_, i) => selection(`page${i}`, { variable: i }, repeatedFields)),
  "}",
].join("\n");

/** The floor's request: REPEATED_DOCUMENT with new values (of the unique texts' kind and size) in its variables. */
export function repeatedDocumentBody(): { body: string; documentBytes: number } {
  const variables: Record<string, unknown> = {};
  for (let i = 0; i < REPEATED_ALIASES; i++) {
    const v = values(REPEATED_VALUE_LENGTH);
    Object.assign(variables, { [`start${i}`]: v.start, [`count${i}`]: v.count, [`actor${i}`]: v.actor });
    variables[`names${i}`] = v.names;
  }
  return { body: JSON.stringify({ query: REPEATED_DOCUMENT, variables }), documentBytes: REPEATED_DOCUMENT.length };
}
