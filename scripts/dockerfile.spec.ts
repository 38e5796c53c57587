/**
 * The Dockerfile's build stage installs the dependencies from what decides them alone (every workspace manifest, the
 * lockfile, the workspace settings) before it copies the sources, so that a source change reuses the dependency layer.
 * No Docker engine is needed: the stage is read as text.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { ROOT, workspacePackages } from "./declared-dependencies";

/** The build stage's instructions, continuation lines joined. */
function buildStage(): string[] {
  const lines = readFileSync(path.join(ROOT, "Dockerfile"), "utf8")
    .replace(/\\\n/g, " ")
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => line && !line.startsWith("#"));
  const from = lines.findIndex((line) => / AS build$/i.test(line));
  const end = lines.findIndex((line, i) => i > from && /^FROM /i.test(line));
  return lines.slice(from + 1, end);
}

/** The sources of a COPY (all but its destination), without flags. */
const sourcesOf = (copy: string) =>
  copy
    .split(/\s+/)
    .slice(1, -1)
    .filter((word) => !word.startsWith("--"));

describe("the Dockerfile's build stage", () => {
  const stage = buildStage();
  const install = stage.findIndex((line) => /^RUN pnpm install\b/.test(line));
  const everything = stage.findIndex((line) => /^COPY \.\s+\.$/.test(line));

  it("installs before it copies the sources, and builds after", () => {
    expect(install).toBeGreaterThan(0);
    expect(everything).toBeGreaterThan(install);
    expect(stage[install]).toContain("--frozen-lockfile");
    expect(stage.findIndex((line) => /^RUN pnpm build\b/.test(line))).toBeGreaterThan(everything);
  });

  it("copies every workspace manifest, the lockfile and the workspace settings before installing, and no source", () => {
    const copied = stage
      .slice(0, install)
      .filter((line) => /^COPY /.test(line))
      .flatMap(sourcesOf);
    const manifests = workspacePackages().map((dir) => path.posix.join(dir, "package.json"));
    expect(copied).toEqual(expect.arrayContaining([...manifests, "pnpm-lock.yaml", "pnpm-workspace.yaml", ".npmrc"]));
    // What else the install reads: the bin the root links, and the schema @mdp/db's postinstall generates from.
    const others = copied.filter((file) => !manifests.includes(file));
    expect(others.sort()).toEqual(
      [".npmrc", "cli/bin", "pnpm-lock.yaml", "pnpm-workspace.yaml", "prisma/schema.prisma"].sort(),
    );
  });
});
