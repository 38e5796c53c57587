/**
 * No class constructor in services/, libs/ or cli/ takes 6 or more parameters (tests, bench/ and generated code
 * aside): past a handful, positional arguments are easy to pass in the wrong order when two share a type, and every
 * caller changes when one is added. Such a class takes one deps object (an exported `XxxDeps` interface) instead.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import ts from "typescript";
import { REPOSITORY_ROOT, repositoryFiles } from "./repository-files";

const MAX_PARAMETERS = 5;

/** `file:line Class: N parameters` for each constructor of the source that takes more than MAX_PARAMETERS. */
function longConstructors(file: string): string[] {
  const text = readFileSync(path.join(REPOSITORY_ROOT, file), "utf8");
  if (!text.includes("constructor")) return [];
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isConstructorDeclaration(node) && node.parameters.length > MAX_PARAMETERS) {
      const line = source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1;
      const owner = ts.isClassLike(node.parent) ? (node.parent.name?.text ?? "(anonymous class)") : "(class)";
      found.push(`${file}:${line} ${owner}: ${node.parameters.length} parameters`);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

describe("class constructors", () => {
  it(`take at most ${MAX_PARAMETERS} parameters each (more: one deps object)`, () => {
    const long = repositoryFiles()
      .filter((file) => /^(services|libs|cli)\//.test(file) && /\.ts$/.test(file) && !file.endsWith(".d.ts"))
      .filter((file) => !/\/generated\/|\/bench\/|\/test\/|\.spec\.ts$/.test(file))
      .flatMap(longConstructors);
    expect(long).toEqual([]);
  });
});
