/**
 * No comment cites a file that is not in the repository (nine comments once cited a design note clients never
 * see): every TypeScript or markdown file name a comment in our TypeScript gives must exist somewhere in the tree.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { REPOSITORY_ROOT as ROOT, repositoryFiles } from "./repository-files";

it("every file a comment cites is in the repository", () => {
  const tree = repositoryFiles();
  const exists = (cited: string) => tree.some((file) => file === cited || file.endsWith(`/${cited}`));
  const missing = tree
    .filter((file) => file.endsWith(".ts") && !file.includes("/generated/"))
    .flatMap((file) =>
      readFileSync(path.join(ROOT, file), "utf8")
        .split("\n")
        .flatMap((line, i) => {
          const comment = /^\s*(\/\/|\*|\/\*\*?)/.test(line) ? line : (line.split("// ")[1] ?? "");
          const cited = [...comment.matchAll(/(?<![\w./-])([\w-][\w.-]*(?:\/[\w.-]+)*\.(?:ts|md))\b/g)].map(
            (m) => m[1]!,
          );
          return cited.filter((name) => !exists(name)).map((name) => `${file}:${i + 1} cites ${name}`);
        }),
    );
  expect(missing).toEqual([]);
});
