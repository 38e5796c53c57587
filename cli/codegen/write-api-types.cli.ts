import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { apiTypes, ROOT, WRITE_COMMAND } from "./api-types";

/**
 * `pnpm cli:types` (and the end of `pnpm api:write`): rewrites the CLI's generated API types from docs/api/.
 * `--check` writes nothing: it names each stale file and exits 1 (the drift test, src/api-types.spec.ts, runs it in a
 * process of its own, since jest's module loader cannot load graphql-codegen's ES-module dependencies).
 */
async function main(): Promise<void> {
  const check = process.argv.includes("--check");
  for (const [file, text] of Object.entries(await apiTypes())) {
    const path = resolve(ROOT, file);
    if (check) {
      let current: string | undefined;
      try {
        current = readFileSync(path, "utf8");
      } catch {
        current = undefined;
      }
      if (current !== text) {
        console.error(`${file} differs from what docs/api/ gives: run \`${WRITE_COMMAND}\` and commit it.`);
        process.exitCode = 1;
      }
      continue;
    }
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, text);
    console.log(`wrote ${file}`);
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 2;
});
