import express, { type Express, type Response } from "express";
import { createServer, type Server } from "node:http";
import { pinoHttp } from "pino-http";
import type { Logger } from "@mdp/core";
import type { Actor } from "./auth/actor";
import { authenticate } from "./auth/auth.middleware";
import type { Authenticator } from "./auth/authenticator";
import type { Services } from "./graphql/context";
import { createGraphQLMiddleware } from "./graphql/server";
import { errorHandler, notFoundHandler } from "./http/error-handler";
import { healthRoutes } from "./http/health.routes";
import { requestId } from "./http/request-id";
import type { Readiness } from "./readiness";

export const BODY_LIMIT = "1mb";
export const GRAPHQL_PATHS = ["/api/graphql", "/graphql"];

export interface AppDeps {
  logger: Logger;
  authenticator: Authenticator;
  readiness: Readiness;
  services: Services;
}

export interface Gateway {
  app: Express;
  server: Server;
  /** stops Apollo (which drains the HTTP server) */
  stop: () => Promise<void>;
}

/** Builds the gateway: the express app and its HTTP server, not yet listening. */
export async function createGateway(deps: AppDeps): Promise<Gateway> {
  const app = express();
  const server = createServer(app);
  app.disable("x-powered-by");
  app.set("trust proxy", "loopback");
  app.use(
    pinoHttp({
      logger: deps.logger,
      genReqId: requestId,
      // Who made each request (never how: credentials are redacted by the logger).
      customProps: (_req, res) => {
        const actor = (res as Response).locals?.actor as Actor | undefined;
        return actor ? { actor: actor.urn, tokenId: actor.tokenId } : {};
      },
      // Health probes every few seconds would drown the log.
      autoLogging: { ignore: (req) => req.url === "/health" || req.url === "/ready" },
    }),
  );
  app.use(healthRoutes(deps.readiness));
  app.use(authenticate(deps.authenticator));
  app.use(express.json({ limit: BODY_LIMIT }));

  const graphql = await createGraphQLMiddleware({ logger: deps.logger, httpServer: server, services: deps.services });
  app.use(GRAPHQL_PATHS, graphql.middleware);

  app.use(notFoundHandler);
  app.use(errorHandler(deps.logger, GRAPHQL_PATHS));
  return { app, server, stop: graphql.stop };
}
