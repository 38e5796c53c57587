/**
 * ARCHITECTURE.md's map is true to the manifests: its "imports" table names every workspace package with exactly
 * the `@mdp/*` packages its package.json depends on at run time, and its "owns / must not" table names every package
 * too. A new package or dependency without its row fails here.
 */
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";

const ROOT = path.join(__dirname, "..");
const architecture = readFileSync(path.join(ROOT, "ARCHITECTURE.md"), "utf8");

/** The rows of the markdown table whose header starts with `header`: first cell (unquoted) → second cell. */
function tableRows(header: string): Map<string, string> {
  const lines = architecture.split("\n");
  const start = lines.findIndex((line) => line.replace(/\s+/g, " ").startsWith(header));
  if (start < 0) throw new Error(`ARCHITECTURE.md has no table headed ${header}`);
  const rows = new Map<string, string>();
  for (const line of lines.slice(start + 2)) {
    if (!line.startsWith("|")) break;
    const [name, second] = line
      .split("|")
      .slice(1, 3)
      .map((cell) => cell.trim().replace(/`/g, ""));
    rows.set(name!, second!);
  }
  return rows;
}

/** Every workspace package's folder, with the `@mdp/*` packages it depends on (short names). */
function workspace(): Map<string, string[]> {
  const folders = ["libs", "services"].flatMap((dir) =>
    readdirSync(path.join(ROOT, dir), { withFileTypes: true })
      .filter((entry) => entry.isDirectory())
      .map((entry) => `${dir}/${entry.name}`),
  );
  const packages = new Map<string, string[]>();
  for (const folder of [...folders, "cli", "bench"]) {
    const manifest = JSON.parse(readFileSync(path.join(ROOT, folder, "package.json"), "utf8")) as {
      dependencies?: Record<string, string>;
    };
    const ours = Object.keys(manifest.dependencies ?? {}).filter((name) => name.startsWith("@mdp/"));
    packages.set(folder, ours.map((name) => name.slice("@mdp/".length)).sort());
  }
  return packages;
}

describe("ARCHITECTURE.md's map", () => {
  const packages = workspace();

  it("lists what each package imports, as its manifest declares", () => {
    const imports = tableRows("| package | imports |");
    const declared = new Map([...packages].map(([folder, deps]) => [folder, deps.join(", ") || "none"]));
    const documented = new Map(
      [...imports].map(([folder, text]) => [
        folder,
        text.startsWith("none")
          ? "none"
          : text
              .split(",")
              .map((name) => name.trim())
              .sort()
              .join(", "),
      ]),
    );
    expect(Object.fromEntries(documented)).toEqual(Object.fromEntries(declared));
  });

  it("says what every package owns and must not do", () => {
    const owns = tableRows("| package | owns | must not |");
    const expected = [...packages.keys()].filter((folder) => folder !== "bench").sort();
    expect([...owns.keys()].sort()).toEqual(expected);
  });
});
