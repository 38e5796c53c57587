/**
 * `pnpm start`: the whole system on one machine. Applies migrations, then runs the gateway and the three workers, with
 * their output prefixed. With DATABASE_URL/REDIS_URL unset it runs private PostgreSQL and Redis under .data/.
 * A service that dies is restarted with backoff while the others keep running (scripts/supervisor.ts says how).
 * Ctrl-C (or SIGTERM) stops the services gracefully, restarting none, then the private servers.
 */
import path from "node:path";
import { DEVELOPMENT_SECRETS, loadConfigOrExit, logFormat, type Config } from "@mdp/core";
import { applyMigrations, ensureDatabase } from "@mdp/db";
import { ensureLocalServices, isListening } from "./local-services";
import { serviceNodeArgs } from "./service-command";
import { START_SUPERVISION, Supervisor } from "./supervisor";

const SERVICES = ["gateway", "truncation-worker", "evaluation-worker", "webhook-worker"] as const;

async function main(): Promise<void> {
  const root = path.resolve(__dirname, "..");
  // A bad setting is refused before anything starts, as each service would refuse it (the URLs are known later; an
  // empty variable counts as unset, here as in the services).
  const set = Object.fromEntries(Object.entries(process.env).filter(([, value]) => value));
  const config = loadConfigOrExit({ DATABASE_URL: "postgresql://localhost/x", REDIS_URL: "redis://localhost", ...set });
  // Taken, the gateway would fail only after everything started, and the port's owner would answer its /health.
  const reachable = config.HOST === "0.0.0.0" || config.HOST === "::" ? "127.0.0.1" : config.HOST;
  if (await isListening(config.PORT, reachable)) {
    process.stderr.write(
      `pnpm start: ${config.HOST}:${config.PORT} is in use by another process: stop it, or set PORT to a free port\n`,
    );
    process.exit(1);
  }
  const local = await ensureLocalServices(root, { reuseDefaults: false });
  // The services write to a pipe here: the format is what this process's own stdout calls for (readable lines on a
  // developer's terminal, JSON when pnpm start's output is itself piped or collected).
  const env = {
    ...process.env,
    DATABASE_URL: local.databaseUrl,
    REDIS_URL: local.redisUrl,
    LOG_FORMAT: logFormat(config),
  };
  try {
    // Migrations need a session of their own: PostgreSQL itself when DATABASE_URL names a pooler (docs/pooling.md).
    const migrationUrl = process.env.DATABASE_DIRECT_URL || local.databaseUrl;
    await ensureDatabase(migrationUrl);
    const { applied } = await applyMigrations(migrationUrl);
    process.stdout.write(applied.length ? `Applied migrations: ${applied.join(", ")}\n` : "Migrations up to date\n");
  } catch (error) {
    await local.stop(); // leave no private server running behind a failed start
    throw error;
  }

  // Each service is restarted with backoff when it dies, so one crash (e.g. a worker out of memory) stops no other.
  const supervisor = new Supervisor(
    SERVICES.map((name) => ({ name, command: process.execPath, args: serviceNodeArgs(root, name) })),
    {
      ...START_SUPERVISION,
      spawnOptions: { cwd: root, env },
      output: (service, line) =>
        service ? process.stdout.write(`[${service}] ${line}\n`) : process.stderr.write(`pnpm start: ${line}\n`),
    },
  );
  supervisor.start();

  let stopping = false;
  const stopAll = async () => {
    if (stopping) return;
    stopping = true;
    await supervisor.stop();
    await local.stop();
    process.exit(0);
  };
  process.on("SIGINT", () => void stopAll());
  process.on("SIGTERM", () => void stopAll());
  // How to use it once it can be used: not before the gateway answers (a gateway that dies at start is restarted).
  if (await gatewayAnswers(config, () => stopping)) printHowToUse(config, local.databaseUrl);
}

/** Polls the gateway's /health until it answers (true) or the system is stopping (false). */
async function gatewayAnswers(config: Config, stopping: () => boolean): Promise<boolean> {
  while (!stopping()) {
    const answered = await fetch(`${origin(config)}/health`).then(
      (res) => res.ok,
      () => false,
    );
    if (answered) return true;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  return false;
}

/** The gateway's address for a URL: an IPv6 host in brackets. */
function origin(config: Config): string {
  return `http://${config.HOST.includes(":") ? `[${config.HOST}]` : config.HOST}:${config.PORT}`;
}

function printHowToUse(config: Config, databaseUrl: string): void {
  const url = origin(config);
  const root = config.ROOT_USER_URN;
  // The development secret is in the source anyway; a secret of the operator's own is never printed.
  const secret =
    config.SYSTEM_CLIENT_SECRET === DEVELOPMENT_SECRETS.SYSTEM_CLIENT_SECRET
      ? DEVELOPMENT_SECRETS.SYSTEM_CLIENT_SECRET
      : "<your SYSTEM_CLIENT_SECRET>";
  const clientId = config.SYSTEM_CLIENT_ID;
  const lines = !config.AUTH_ENABLED
    ? [`  curl -s ${url}/api/graphql -H 'X-Platform-Actor: ${root}' -H 'Content-Type: application/json' \\`]
    : [
        `  curl -s ${url}/api/graphql -u '${clientId}:${secret}' \\`,
        `    -H 'X-Platform-Actor: ${root}' -H 'Content-Type: application/json' \\`,
      ];
  process.stdout.write(
    [
      "",
      `Gateway: ${url}  (GraphQL at ${url}/api/graphql, health at ${url}/health and ${url}/ready)`,
      "Act as the root user through the system client, for example to create access tokens with createAccessToken:",
      ...lines,
      `    -d '{"query":"{ me { urn } }"}'`,
      // Only the private server's: a DATABASE_URL of the operator's own may hold a password.
      ...(process.env.DATABASE_URL
        ? []
        : [`Database: ${databaseUrl} (set DATABASE_URL to it for pnpm db:bulk-load and the README's other commands)`]),
      "Ctrl-C (SIGTERM when run without a terminal) stops everything.",
      "",
    ].join("\n"),
  );
}

main().catch((error: unknown) => {
  process.stderr.write(`pnpm start failed: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
