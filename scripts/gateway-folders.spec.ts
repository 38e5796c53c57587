/**
 * ARCHITECTURE.md's "The gateway's folders" is true to the gateway's imports: it has a row for every folder of
 * services/gateway/src, each row names every gateway folder (or root file) its folder's files import, and names none
 * they do not. A base folder's or feature's http/ and graphql/ imports are its transport edge's, which the header says
 * once and eslint.config.mjs holds; the transport folders' rows name them.
 */
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";

const ROOT = path.join(__dirname, "..");
const SRC = path.join(ROOT, "services/gateway/src");
const TRANSPORT_FOLDERS = ["http", "graphql"];

interface Row {
  kind: string;
  /** the cell's own names, before "the base folders" and the like are expanded */
  named: string[];
  /** what the cell allows: its names and the folders its phrases stand for */
  allowed: Set<string>;
}

/** The table's rows: folder (without its slash) → its kind (`base`, `feature`, `transport`) and imports cell. */
function table(): Map<string, { kind: string; imports: string }> {
  const lines = readFileSync(path.join(ROOT, "ARCHITECTURE.md"), "utf8").split("\n");
  const start = lines.findIndex((line) => line.replace(/\s+/g, " ").startsWith("| folder | holds | imports"));
  if (start < 0) throw new Error("ARCHITECTURE.md has no table headed | folder | holds | imports");
  const rows = new Map<string, { kind: string; imports: string }>();
  for (const line of lines.slice(start + 2)) {
    if (!line.startsWith("|")) break;
    const [folder, holds, imports] = line
      .split("|")
      .slice(1, 4)
      .map((cell) => cell.trim());
    rows.set(folder!.replace(/`/g, "").replace(/\/$/, ""), { kind: holds!.split(":")[0]!, imports: imports! });
  }
  return rows;
}

/** Each row's names and what its phrases ("the base folders", "every feature but metadata") stand for. */
function rows(): Map<string, Row> {
  const raw = table();
  const ofKind = (...kinds: string[]) => [...raw].filter(([, row]) => kinds.includes(row.kind)).map(([name]) => name);
  const phrases: Record<string, string[]> = {
    none: [],
    "the base folders": ofKind("base"),
  };
  return new Map(
    [...raw].map(([folder, { kind, imports }]) => {
      const parts = imports
        .replace(/\([^)]*\)/g, "")
        .replace(/`/g, "")
        .split(/[;,]/)
        .map((part) => part.trim().replace(/\.ts$/, ""))
        .filter((part) => part !== "");
      const but = (part: string) => /^every feature but (\S+)$/.exec(part)?.[1];
      const named = parts.filter((part) => !(part in phrases) && but(part) === undefined);
      const expanded = parts.flatMap((part) => {
        const except = but(part);
        return except === undefined ? (phrases[part] ?? []) : ofKind("feature").filter((name) => name !== except);
      });
      const allowed = new Set([...named, ...expanded]);
      return [folder, { kind, named, allowed }];
    }),
  );
}

/** The gateway folders and root files (`readiness`, `app`) that `folder`'s files import. */
function importsOf(folder: string): Set<string> {
  const dir = path.join(SRC, folder);
  const files = readdirSync(dir, { recursive: true, encoding: "utf8" }).filter((file) => file.endsWith(".ts"));
  const targets = files.flatMap((file) =>
    [...readFileSync(path.join(dir, file), "utf8").matchAll(/from "\.\.\/([\w.-]+)(?:\/|")/g)].map((m) => m[1]!),
  );
  return new Set(targets);
}

describe("ARCHITECTURE.md's gateway folders", () => {
  const documented = rows();
  const folders = readdirSync(SRC, { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .map((entry) => entry.name);

  it("names every folder of services/gateway/src", () => {
    expect([...documented.keys()].sort()).toEqual([...folders].sort());
  });

  it("names every gateway folder each folder imports, and no other", () => {
    const wrong = folders.flatMap((folder) => {
      const row = documented.get(folder);
      if (!row) return [];
      const imported = [...importsOf(folder)].filter(
        (target) => row.kind === "transport" || !TRANSPORT_FOLDERS.includes(target),
      );
      const missing = imported
        .filter((target) => !row.allowed.has(target))
        .map((target) => `${folder} imports ${target}`);
      const stale = row.named
        .filter((name) => !imported.includes(name))
        .map((name) => `${folder} names ${name}, which it does not import`);
      return [...missing, ...stale];
    });
    expect(wrong).toEqual([]);
  });
});
