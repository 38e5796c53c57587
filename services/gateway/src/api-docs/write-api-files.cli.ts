import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { apiFiles } from "./api-files";

/** `pnpm api:write`: rewrites docs/api/openapi.json and docs/api/schema.graphql from the code. */
async function main(): Promise<void> {
  const root = resolve(__dirname, "../../../..");
  for (const [file, text] of Object.entries(await apiFiles())) {
    const path = resolve(root, file);
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, text);
    console.log(`wrote ${file}`);
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
