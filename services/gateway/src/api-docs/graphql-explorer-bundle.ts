import { readFile } from "node:fs/promises";
import path from "node:path";

/**
 * The GraphQL explorer's files: its page script (graphql-explorer.browser.mjs) bundled by esbuild with GraphiQL,
 * React and their styles into one script and one stylesheet. `pnpm build` writes them to the gateway's dist/assets/,
 * where the built gateway reads them; a gateway running from its sources (`pnpm start`, the tests) bundles them in
 * memory on the page's first request instead (a second or two; esbuild is the root's, already loading the sources).
 * Either way nothing of graphiql or React is read at run time but these two files.
 */
export const EXPLORER_FILES = ["explorer.js", "explorer.css"] as const;
export type ExplorerFile = (typeof EXPLORER_FILES)[number];

/** dist/assets/ of the built gateway (this file is dist/api-docs/graphql-explorer-bundle.js there) */
const BUILT_ASSETS = path.join(__dirname, "..", "assets");

/** Bundles the explorer: into `outdir` (the build), or in memory when none is given. */
export async function bundleExplorer(outdir?: string): Promise<Map<ExplorerFile, Buffer>> {
  const esbuild = await import("esbuild");
  const result = await esbuild.build({
    entryPoints: { explorer: path.join(__dirname, "graphql-explorer.browser.mjs") },
    bundle: true,
    minify: true,
    format: "iife",
    platform: "browser",
    target: "es2020",
    // React's and graphql-js's production builds
    define: { "process.env.NODE_ENV": '"production"' },
    outdir: outdir ?? "/",
    write: outdir !== undefined,
    logLevel: "warning",
  });
  const files = new Map<ExplorerFile, Buffer>();
  for (const output of result.outputFiles ?? [])
    files.set(path.basename(output.path) as ExplorerFile, Buffer.from(output.contents));
  return files;
}

let loading: Promise<Map<ExplorerFile, Buffer>> | undefined;

/** The explorer's files: read from dist/assets/ once, or bundled once when the gateway runs from its sources. */
export function explorerFiles(): Promise<Map<ExplorerFile, Buffer>> {
  if (!loading) {
    loading = readBuilt().then((built) => built ?? bundleExplorer());
    // A failed bundle is tried again by the next request, not kept.
    loading.catch(() => (loading = undefined));
  }
  return loading;
}

async function readBuilt(): Promise<Map<ExplorerFile, Buffer> | undefined> {
  try {
    const contents = await Promise.all(EXPLORER_FILES.map((name) => readFile(path.join(BUILT_ASSETS, name))));
    return new Map(EXPLORER_FILES.map((name, index) => [name, contents[index]!]));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
}
