/**
 * What each workspace package imports, against what its package.json declares: `pnpm deps:check` and
 * scripts/declared-dependencies.spec.ts. A package must declare every package it imports (a module that resolves only
 * because another package or the root installed it breaks in a `pnpm deploy` of that package alone), must import
 * what it declares (each exception below says why it stays), and a version used by several manifests comes from
 * pnpm-workspace.yaml's catalog, so the manifests cannot drift apart.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { builtinModules } from "node:module";
import path from "node:path";
import ts from "typescript";

export const ROOT = path.resolve(__dirname, "..");

/** Workspace packages, as pnpm-workspace.yaml's `packages` globs find them; "." is the root's own files. */
export function workspacePackages(): string[] {
  const dirs = ["."];
  for (const parent of ["libs", "services"]) {
    for (const name of readdirSync(path.join(ROOT, parent))) dirs.push(`${parent}/${name}`);
  }
  return [...dirs, "bench", "cli"].filter((dir) =>
    statSync(path.join(ROOT, dir, "package.json"), { throwIfNoEntry: false }),
  );
}

/**
 * Declared but not imported, on purpose. bullmq's optional peers: pnpm resolves one bullmq instance per set of peers,
 * and every package that declares bullmq declares the peers it is installed with, so that each package (and a
 * `pnpm deploy` of one service) gets the same instance: its error classes are compared with instanceof across
 * packages (@mdp/tasks' claimJob, the workers). Only @mdp/queues imports bullmq-otel itself.
 */
const BULLMQ_PEERS = ["bullmq-otel", "ioredis", "pg"];
const NOT_IMPORTED: Record<string, Record<string, string>> = {
  ".": {
    "@swc/core": "jest's transform (@swc/jest) compiles with it",
    "@swc/jest": "jest.config.js names it as a string",
    "@types/express": "types",
    eslint: "`pnpm lint`",
    prettier: "`pnpm lint`, `pnpm format`",
    jest: "scripts/test.ts resolves its bin",
    prisma: "the Prisma CLI, run by prisma.config.ts' commands",
    tsx: "runs the root scripts",
    typescript: "`pnpm typecheck`",
    "@mdp/core": "root tests and scripts import it",
    "@mdp/cli": "its bin: `pnpm mdp` runs node_modules/.bin/mdp directly, printing nothing of its own",
  },
  "libs/db": {
    "@prisma/client": "the generated client (src/generated, not scanned) imports it",
    prisma: "the CLI that generates the client (postinstall)",
    tsx: "runs the package's scripts",
  },
  bench: {
    "@opentelemetry/api": "the peer of the floors' @opentelemetry/sdk-node: declared so that it is @mdp/core's install",
  },
  cli: {
    graphql: "peer dependency of the graphql-codegen packages",
    "@graphql-codegen/typescript-operations": "a plugin graphql-codegen loads by name (codegen/api-types.ts)",
  },
};

const SKIP_DIRS = new Set(["node_modules", "dist", "generated", ".data", "coverage", "prisma"]);
const SOURCE = /\.(ts|cts|mts|js|cjs|mjs)$/;

function sourceFiles(dir: string, isRoot: boolean, packages: string[]): string[] {
  const files: string[] = [];
  for (const entry of readdirSync(path.join(ROOT, dir), { withFileTypes: true })) {
    const rel = path.join(dir, entry.name);
    if (SKIP_DIRS.has(entry.name) || entry.name.startsWith(".")) continue;
    if (isRoot && entry.isDirectory() && packages.some((p) => p !== "." && (p === rel || p.startsWith(`${rel}/`)))) {
      // the root owns test/, scripts/ and its config files; libs/, services/, bench/ and cli/ are packages of their own
      if (packages.includes(rel)) continue;
    }
    if (entry.isDirectory()) files.push(...sourceFiles(rel, isRoot, packages));
    else if (SOURCE.test(entry.name) && !entry.name.endsWith(".d.ts")) files.push(rel);
  }
  return files;
}

/** The package a bare specifier names: `@scope/name` or `name`; undefined for relative paths and Node builtins. */
function packageOf(specifier: string): string | undefined {
  if (specifier.startsWith(".") || specifier.startsWith("/") || specifier.startsWith("node:")) return undefined;
  const name = specifier.startsWith("@") ? specifier.split("/").slice(0, 2).join("/") : specifier.split("/")[0]!;
  return builtinModules.includes(name) ? undefined : name;
}

interface Manifest {
  name?: string;
  dependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
}

export interface Finding {
  pkg: string;
  problem: string;
}

export function checkDependencies(): Finding[] {
  const packages = workspacePackages();
  const findings: Finding[] = [];
  const specsByDependency = new Map<string, Set<string>>();
  for (const pkg of packages) {
    const manifest = JSON.parse(readFileSync(path.join(ROOT, pkg, "package.json"), "utf8")) as Manifest;
    const declared = { ...manifest.peerDependencies, ...manifest.devDependencies, ...manifest.dependencies };
    const imported = new Map<string, string>();
    for (const file of sourceFiles(pkg, pkg === ".", packages)) {
      const text = readFileSync(path.join(ROOT, file), "utf8");
      const { importedFiles } = ts.preProcessFile(text, true, true);
      // require.resolve of a package.json locates a package's files (swagger-ui-dist's pages): a use all the same
      const resolved = [...text.matchAll(/require\.resolve\(\s*["']([^"']+)["']/g)].map((m) => ({ fileName: m[1]! }));
      for (const { fileName } of [...importedFiles, ...resolved]) {
        const name = packageOf(fileName);
        if (name && name !== manifest.name && !imported.has(name)) imported.set(name, file);
      }
    }
    for (const [name, file] of imported) {
      if (!(name in declared) && !(`@types/${name}` in declared)) {
        findings.push({ pkg, problem: `${file} imports ${name}, which ${pkg}/package.json does not declare` });
      }
    }
    const declaresBullmq = "bullmq" in declared;
    for (const [name, spec] of Object.entries(declared)) {
      if (!name.startsWith("@types/") && !imported.has(name) && !NOT_IMPORTED[pkg]?.[name]) {
        if (!(declaresBullmq && BULLMQ_PEERS.includes(name))) {
          findings.push({ pkg, problem: `declares ${name} but imports it nowhere` });
        }
      }
      if (!spec.startsWith("workspace:")) {
        if (!specsByDependency.has(name)) specsByDependency.set(name, new Set());
        specsByDependency.get(name)!.add(`${pkg}\t${spec}`);
      }
    }
    if (declaresBullmq) {
      for (const peer of ["bullmq-otel", "ioredis"]) {
        if (!(peer in declared)) findings.push({ pkg, problem: `declares bullmq without its peer ${peer}` });
      }
    }
  }
  for (const [name, users] of specsByDependency) {
    const specs = [...users].map((u) => u.split("\t"));
    if (specs.length > 1 && specs.some(([, spec]) => spec !== "catalog:")) {
      findings.push({
        pkg: ".",
        problem: `${name} is declared by ${specs.map(([p, s]) => `${p} (${s})`).join(", ")}: use "catalog:" in each`,
      });
    }
  }
  return findings;
}

if (require.main === module) {
  const findings = checkDependencies();
  for (const { pkg, problem } of findings) console.error(`${pkg}: ${problem}`);
  process.exitCode = findings.length > 0 ? 1 : 0;
}
