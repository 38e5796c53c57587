import { readdirSync } from "node:fs";
import path from "node:path";

export const REPOSITORY_ROOT = path.join(__dirname, "..");
const SKIP = new Set(["node_modules", "dist", ".data", ".git"]);

/** The repository's own files (not node_modules, build output, .data or .git), as `/`-separated paths from its root. */
export function repositoryFiles(dir = REPOSITORY_ROOT): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    if (SKIP.has(entry.name)) return [];
    const full = path.join(dir, entry.name);
    return entry.isDirectory()
      ? repositoryFiles(full)
      : [path.relative(REPOSITORY_ROOT, full).split(path.sep).join("/")];
  });
}
