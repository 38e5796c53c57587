/**
 * The CLI's GraphQL documents are in this folder, one file per concept. `pnpm cli:types` reads the `/* GraphQL *\/`
 * texts of every file here and writes their result and variable types to ../generated/graphql.ts (against
 * docs/api/schema.graphql), so the commands read the answers by the server's own schema. A text holds no `${}`: the
 * generator reads it as written, so a document that shares fields names a fragment and appends the fragment's text.
 */

/** A document with the fragments it spreads: a document that spreads a fragment must define it. */
export const withFragments = (document: string, ...fragments: string[]) => document + fragments.join("");
