import { execFile } from "node:child_process";
import path from "node:path";
import { promisify } from "node:util";
import type { DiffSide, MigrationHistoryDiagnosis } from "../../src/migrate/schema-engine";

export type EngineRequest = {
  serverUrl: string;
  /** The engine's main database (read by "database" diffs, written by "apply"); a throwaway one when omitted. */
  databaseUrl?: string;
  migrationsDir?: string;
  schemaPath?: string;
} & ({ op: "diff"; from: DiffSide; to: DiffSide } | { op: "apply" } | { op: "diagnose" });

type EngineResult<R extends EngineRequest> = R extends { op: "diff" }
  ? string
  : R extends { op: "apply" }
    ? string[]
    : MigrationHistoryDiagnosis;

/** Prisma's own schema engine (the Wasm build of `prisma migrate`), run in a child process by engine-cli.ts. */
export async function prismaEngine<R extends EngineRequest>(request: R): Promise<EngineResult<R>> {
  const { stdout } = await promisify(execFile)(
    process.execPath,
    [require.resolve("tsx/cli"), path.join(__dirname, "engine-cli.ts"), JSON.stringify(request)],
    { maxBuffer: 16 * 1024 * 1024 },
  );
  return JSON.parse(stdout) as EngineResult<R>;
}
