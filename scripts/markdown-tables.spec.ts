/**
 * Every table in the docs renders as written: each row has its header's number of cells. In a GitHub table a `|`
 * splits cells even inside backticks unless escaped (`\|`), so a command written `<a\|b>` whose backslash got separated
 * from its pipe split its row, and the renderer dropped what stood past the header's cells (cli/README.md's
 * `tokens revoke-all` row lost its description; README.md's `pnpm --filter` and `pnpm bench` rows theirs).
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { REPOSITORY_ROOT as ROOT, repositoryFiles } from "./repository-files";

/** GitHub's cells of a table line: split at each unescaped `|`, the outer ones optional. */
export function cells(line: string): string[] {
  const parts = line.trim().split(/(?<!\\)\|/);
  if (parts[0]!.trim() === "") parts.shift();
  if (parts.length > 0 && parts.at(-1)!.trim() === "") parts.pop();
  return parts;
}

const DELIMITER = /^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$/;

/** `file:line: n cells, the header has m` for each row whose cells are not its header's. */
export function tableProblems(file: string, text: string): string[] {
  const lines = text.split("\n");
  const problems: string[] = [];
  let fenced = false;
  for (let i = 0; i < lines.length; i++) {
    if (/^\s*(```|~~~)/.test(lines[i]!)) fenced = !fenced;
    if (fenced || !lines[i]!.includes("|") || !DELIMITER.test(lines[i + 1] ?? "") || !lines[i + 1]!.includes("-"))
      continue;
    const width = cells(lines[i]!).length;
    let row = i + 2;
    for (; row < lines.length && lines[row]!.trim() !== "" && lines[row]!.includes("|"); row++) {
      const n = cells(lines[row]!).length;
      if (n !== width) problems.push(`${file}:${row + 1}: ${n} cells, the header has ${width}`);
    }
    i = row - 1;
  }
  return problems;
}

describe("markdown tables", () => {
  it("finds a row split by an unescaped pipe", () => {
    const table = "| command | what |\n| --- | --- |\n| `a <b\\|c>` | ok |\n| `a <b\\ | c>` | lost |\n";
    expect(tableProblems("t.md", table)).toEqual(["t.md:4: 3 cells, the header has 2"]);
  });

  it("every row of every table in the docs has its header's cells", () => {
    const files = repositoryFiles().filter((file) => file.endsWith(".md"));
    expect(files).toEqual(expect.arrayContaining(["README.md", "cli/README.md", "docs/api.md", "docs/limits.md"]));
    expect(files.flatMap((file) => tableProblems(file, readFileSync(path.join(ROOT, file), "utf8")))).toEqual([]);
  });
});
