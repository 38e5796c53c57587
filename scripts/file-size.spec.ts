/**
 * No source file over 400 lines outside bench/ and generated code, tests included: a file that long holds several
 * concepts, and the next reader finds each more easily in a file named for it.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { REPOSITORY_ROOT, repositoryFiles } from "./repository-files";

const MAX_LINES = 400;

describe("source files", () => {
  it(`hold at most ${MAX_LINES} lines each`, () => {
    const long = repositoryFiles()
      .filter((file) => /\.(ts|cjs)$/.test(file))
      .filter((file) => !/^bench\/|\/generated\//.test(file))
      .map((file) => [file, readFileSync(path.join(REPOSITORY_ROOT, file), "utf8").split("\n").length - 1] as const)
      .filter(([, lines]) => lines > MAX_LINES);
    expect(long).toEqual([]);
  });
});
