/**
 * Runs one request against Prisma's schema engine (Wasm) and prints the JSON result. The integration tests call it in
 * a child process: the engine package is ESM-only and jest (CommonJS) cannot load it in-process.
 */
import { type DiffSide, withSchemaEngine } from "../../src/migrate/schema-engine";
import type { EngineRequest } from "./prisma-engine";

async function main(): Promise<void> {
  const request = JSON.parse(process.argv[2] ?? "{}") as EngineRequest;
  const result = await withSchemaEngine(request, (engine): Promise<unknown> => {
    switch (request.op) {
      case "diff":
        return engine.diff(request.from as DiffSide, request.to as DiffSide);
      case "apply":
        return engine.applyMigrations();
      case "diagnose":
        return engine.diagnoseMigrationHistory();
    }
  });
  // Exit explicitly: the engine leaves its 10 s advisory-lock timeout timer running after applyMigrations.
  process.stdout.write(JSON.stringify(result), () => process.exit(0));
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
