import { spawn, type ChildProcess } from "node:child_process";
import path from "node:path";
import { SERVICE_NODE_FLAGS, typeScriptLoaderArgs } from "../../scripts/service-command";

/**
 * A helper process of a benchmark (a baseline server, a no-op worker), run as the services run: NODE_ENV=production
 * and their node flags, so baseline and service are tuned alike. Its stdout is piped, for its readiness line.
 */
export function spawnBenchProcess(file: string, env: Record<string, string>): ChildProcess {
  return spawn(
    process.execPath,
    [...SERVICE_NODE_FLAGS, ...typeScriptLoaderArgs(path.resolve(__dirname, "../..")), file],
    {
      env: { ...process.env, NODE_ENV: "production", ...env },
      stdio: ["ignore", "pipe", "inherit"],
    },
  );
}
