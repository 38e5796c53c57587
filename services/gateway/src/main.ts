import { stopTelemetry } from "./instrument";
import type { Server } from "node:http";
import { createLogger, loadConfigOrExit, logDestination, setHeapGrowingPercent } from "@mdp/core";
import { createDatabase } from "@mdp/db";
import { closeRedis, createRedis, RedisWritePositions, whenReady } from "@mdp/queues";
import { createGateway } from "./app";
import { composeServices } from "./composition";
import { Readiness } from "./readiness";

/**
 * Full collections when the heap has grown by half of what survived the last one. V8's default on a machine with
 * gigabytes to spare lets it grow up to 4x first: garbage that outlives two young-generation collections (the objects
 * of requests in flight, which at a few hundred requests a second span them) took old space from its ~55 MB live to
 * 230-290 MB between full collections, and the gateway past 400 MB RSS (bench/graphql-memory). This is no heap limit:
 * a larger live set still gets the heap it needs.
 */
setHeapGrowingPercent(50);

async function main(): Promise<void> {
  const config = loadConfigOrExit();
  const logger = createLogger("gateway", config.LOG_LEVEL, logDestination(config));
  if (!config.AUTH_ENABLED) {
    logger.warn(
      "AUTH_ENABLED=false: the X-Platform-Actor header alone is trusted. Never run this way outside local development.",
    );
  }

  // Read-your-writes across gateways: each caller's last write position in Redis, only with replicas (no traffic else).
  const positions = config.DATABASE_REPLICA_URLS.length > 0 ? RedisWritePositions.connect(config, logger) : undefined;
  const db = createDatabase(config.DATABASE_URL, {
    replicas: {
      urls: config.DATABASE_REPLICA_URLS,
      maxLagMs: config.REPLICA_MAX_LAG_MS,
      shared: positions && new RedisWritePositions(positions, config.QUEUE_PREFIX, logger),
    },
  });
  const { prisma } = db;
  const redis = createRedis(config.REDIS_URL, "producer");
  const subscriber = createRedis(config.REDIS_URL, "subscriber");
  // Evaluation replies on a connection of their own (composition.ts Connections).
  const replySubscriber = createRedis(config.REDIS_URL, "subscriber", { connectionName: "mdp-replies" });
  await Promise.all([
    whenReady(redis),
    whenReady(subscriber),
    whenReady(replySubscriber),
    positions && whenReady(positions),
  ]);
  const {
    services,
    http,
    queues,
    authenticator,
    stop: stopServices,
  } = await composeServices(config, { db, redis, subscriber, replySubscriber }, logger);
  const readiness = new Readiness(prisma, redis, config.DATABASE_URL, logger, db.stale);
  const gateway = await createGateway({
    logger,
    authenticator,
    services,
    http,
    queues,
    readiness,
    reads: db.stale,
    graphqlExplorer: config.GRAPHQL_EXPLORER,
    keepAliveTimeoutMs: config.HTTP_KEEP_ALIVE_TIMEOUT_MS,
  });

  await listen(gateway.server, config.PORT, config.HOST);
  // The port bound (PORT=0: one the system chose, which processes started at once cannot both be given).
  const address = gateway.server.address();
  const port = typeof address === "object" && address ? address.port : config.PORT;
  logger.info({ url: `http://${config.HOST}:${port}`, port }, "gateway listening");
  // No reason to exit (PostgreSQL may be on its way up), but a wrong DATABASE_URL should not look like a healthy start.
  void readiness.check().then((report) => {
    if (!report.ready) logger.warn({ checks: report.checks }, "not ready yet: /ready says so until every check is ok");
  });

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, "shutting down: draining HTTP");
    const force = setTimeout(() => {
      logger.error("shutdown took longer than 25 s, exiting");
      process.exit(1);
    }, 25_000).unref();
    try {
      await gateway.stop(); // stops taking requests and waits for the ones in flight
      logger.info("HTTP drained");
      await stopServices();
      await Promise.allSettled([
        closeRedis(redis),
        closeRedis(subscriber),
        closeRedis(replySubscriber),
        positions && closeRedis(positions),
        db.close(),
        stopTelemetry(),
      ]);
      clearTimeout(force);
      logger.info("stopped");
      process.exit(0);
    } catch (error) {
      logger.error({ err: error }, "shutdown failed");
      process.exit(1);
    }
  };
  process.on("SIGTERM", () => void shutdown("SIGTERM"));
  process.on("SIGINT", () => void shutdown("SIGINT"));
}

/** A start that failed for a reason the operator can act on: said in one line, without a stack trace. */
class StartupError extends Error {}

function listen(server: Server, port: number, host: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const failed = (error: NodeJS.ErrnoException) =>
      reject(
        error.code === "EADDRINUSE"
          ? new StartupError(`${host}:${port} is in use by another process: stop it, or set PORT to a free port`)
          : error,
      );
    server.once("error", failed);
    server.listen(port, host, () => {
      server.off("error", failed);
      resolve();
    });
  });
}

main().catch((error: unknown) => {
  const said = error instanceof StartupError ? error.message : error instanceof Error ? error.stack : String(error);
  process.stderr.write(`gateway failed to start: ${said}\n`);
  process.exit(1);
});
