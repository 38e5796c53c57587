/**
 * The CLI's generated API types are what `pnpm cli:types` makes of docs/api/ and graphql-operations/ now: a change
 * to the API descriptions (`pnpm api:write`, which ends with `pnpm cli:types`) or to a GraphQL document the CLI sends
 * fails here until the types are written again and committed.
 */
import { spawnSync } from "node:child_process";
import { resolve } from "node:path";

const ROOT = resolve(__dirname, "../..");

it("the CLI's generated API types are up to date", () => {
  const run = spawnSync(
    process.execPath,
    ["--require", "./scripts/register-ts.cjs", "cli/codegen/write-api-types.cli.ts", "--check"],
    { cwd: ROOT, encoding: "utf8", timeout: 60_000 },
  );
  if (run.status !== 0) throw new Error(run.stderr || `the check exited ${String(run.status ?? run.signal)}`);
}, 60_000);
