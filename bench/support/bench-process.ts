import { spawn, type ChildProcess } from "node:child_process";
import path from "node:path";
import { SERVICE_NODE_FLAGS, typeScriptLoaderArgs } from "../../scripts/service-command";

/**
 * A helper process of a benchmark (a baseline server, a no-op worker), run as the services run: NODE_ENV=production
 * and their node flags, so baseline and service are tuned alike. Its stdout is piped, for its readiness line.
 * SERVICE_NODE_ARGS (e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`) applies to it as to the services, so that a floor's
 * profile can be read beside the service's.
 */
export function spawnBenchProcess(file: string, env: Record<string, string>): ChildProcess {
  return spawn(
    process.execPath,
    [
      ...SERVICE_NODE_FLAGS,
      ...(process.env.SERVICE_NODE_ARGS?.split(" ").filter(Boolean) ?? []),
      ...typeScriptLoaderArgs(path.resolve(__dirname, "../..")),
      file,
    ],
    {
      env: { ...process.env, NODE_ENV: "production", ...env },
      stdio: ["ignore", "pipe", "inherit"],
    },
  );
}
