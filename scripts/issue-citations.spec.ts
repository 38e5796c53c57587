/**
 * No source, test or doc cites an issue number: a reader has no tracker to open it in, so a comment or a doc gives the
 * reason itself, or cites what the reader can open — a record of docs/decisions/ or a study of bench/results/. Another
 * project's issue is cited by its URL (https://github.com/<owner>/<repo>/issues/<n>), which a reader can follow: a line
 * holding such a URL is allowed. Generated code (Prisma's client, the CLI's API types) is fixed at its source.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { REPOSITORY_ROOT as ROOT, repositoryFiles } from "./repository-files";

/** "issue N", "Issue #N's", "issues N and M", and a heading's anchor such as "#metadata-tests-issue-N" (N a number). */
const ISSUE_NUMBER = /\bissues? #?\d+|\bissue-\d+/gi;
/** Another project's issue, by the URL its tracker gives it. */
const OTHER_PROJECT_ISSUE = /https:\/\/github\.com\/[\w.-]+\/[\w.-]+\/issues\/\d+/;
/** The files people write: code, tests, docs, schemas, configuration. */
const CHECKED = /\.(?:ts|js|cjs|mjs|md|prisma|sql|graphql|json|ya?ml|toml)$|(?:^|\/)Dockerfile$/;
const skipped = (file: string) =>
  file.includes("/generated/") || file.startsWith("coverage/") || file === "pnpm-lock.yaml";

/** `file:line: "the citation"` for each issue number a text cites. */
export function issueCitations(file: string, text: string): string[] {
  return text
    .split("\n")
    .flatMap((line, i) =>
      OTHER_PROJECT_ISSUE.test(line)
        ? []
        : [...line.matchAll(ISSUE_NUMBER)].map((match) => `${file}:${i + 1}: "${match[0]}"`),
    );
}

describe("issue citations", () => {
  const number = String(40 + 2);

  it("finds an issue number in each form it is written", () => {
    const text = [
      `a reason (issue ${number}, item 3)`,
      `Issue #${number}'s targets`,
      `issues ${number} and 43`,
      `[a section](other.md#metadata-tests-issue-${number}-item-3)`,
      "issues that a reader can follow, and 42 things",
    ].join("\n");
    expect(issueCitations("t.md", text)).toEqual([
      `t.md:1: "issue ${number}"`,
      `t.md:2: "Issue #${number}"`,
      `t.md:3: "issues ${number}"`,
      `t.md:4: "issue-${number}"`,
    ]);
  });

  it("allows another project's issue, cited by its URL", () => {
    const line = `DataHub's issue ${number} (https://github.com/datahub-project/datahub/issues/${number}) is why`;
    expect(issueCitations("t.md", line)).toEqual([]);
  });

  it("no source, test or doc of the repository cites an issue number", () => {
    const files = repositoryFiles().filter((file) => CHECKED.test(file) && !skipped(file));
    expect(files).toEqual(expect.arrayContaining(["bench/README.md", "prisma/schema.prisma", "docs/api.md"]));
    expect(files.flatMap((file) => issueCitations(file, readFileSync(path.join(ROOT, file), "utf8")))).toEqual([]);
  });
});
