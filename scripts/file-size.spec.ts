/**
 * No source file over 400 lines outside bench/ and generated code: a file that long holds several concepts, and the
 * next reader finds each more easily in a file named for it. Test files are not held to it yet.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { REPOSITORY_ROOT, repositoryFiles } from "./repository-files";

const MAX_LINES = 400;

/**
 * The CLI's GraphQL documents: one file, as the code generator reads them (cli/codegen/api-types.ts), whose output a
 * drift test compares; split when the generator takes several.
 */
const KNOWN_LONGER = new Set(["cli/src/graphql-operations.ts"]);

describe("source files", () => {
  it(`hold at most ${MAX_LINES} lines each`, () => {
    const long = repositoryFiles()
      .filter((file) => /\.(ts|cjs)$/.test(file) && !KNOWN_LONGER.has(file))
      .filter((file) => !/^bench\/|\/generated\/|\.spec\.ts$|\/test\/|^test\//.test(file))
      .map((file) => [file, readFileSync(path.join(REPOSITORY_ROOT, file), "utf8").split("\n").length - 1] as const)
      .filter(([, lines]) => lines > MAX_LINES);
    expect(long).toEqual([]);
  });
});
