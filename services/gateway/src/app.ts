import type { Queue } from "bullmq";
import express, { Router, type Express, type Request, type RequestHandler } from "express";
import { createServer, type Server } from "node:http";
import { AppError, type Logger } from "@mdp/core";
import { authenticate } from "./auth/auth.middleware";
import type { Authenticator } from "./auth/authenticator";
import type { Services } from "./graphql/context";
import { createGraphQLMiddleware } from "./graphql/server";
import { errorHandler, notFoundHandler } from "./http/error-handler";
import { addConfigRoute } from "./http/config.routes";
import { addHealthRoutes } from "./http/health.routes";
import { basicChallenge, basicTokenAsBearer, pageTokenAsBearer } from "./http/browser-auth";
import { DASHBOARD_PATH, queueDashboard } from "./http/queue-dashboard";
import { jsonBody } from "./http/json-body";
import { httpMetrics, routeOf } from "./http/metrics";
import { recordTokenUse } from "./token-usage/token-usage.recorder";
import { requestLogger } from "./http/request-logger";
import { securityHeaders } from "./http/security-headers";
import { addGmsRoutes, type GmsDeps } from "./gms.routes";
import { SESSION_TOKEN_PATH } from "./tokens/session-tokens";
import { apiRoutes } from "./http/action-router";
import { API_DOCS_PATH, addOpenApiRoutes } from "./api-docs/api-docs.routes";
import { GRAPHQL_EXPLORER_ASSETS_PATH, graphqlExplorerAssets, graphqlExplorerPage } from "./api-docs/graphql-explorer";
import { openApiDocument } from "./api-docs/openapi";
import { replicaMetrics, type StaleReads } from "@mdp/db";
import * as prom from "prom-client";
import type { Readiness } from "./readiness";

/** 1 MiB, as body-parser reads "1mb" */
export const BODY_LIMIT_BYTES = 1024 * 1024;
/** A session request is `{"userId": …}`: a few bytes, whatever type it says it is (session-tokens.ts). */
export const SESSION_BODY_LIMIT_BYTES = 16 * 1024;
/** DataHub's SDK posts GraphQL to `{gms}/api/graphql`, with `{gms}` the base it also sends the operations to. */
export const GRAPHQL_PATHS = ["/api/graphql", "/graphql", "/gms/api/graphql", "/api/gms/api/graphql"];
/** Whether a request path is GraphQL's: routes match whatever the case, and Apollo's with a trailing slash too. */
export const isGraphQLPath = (path: string) => GRAPHQL_PATHS.includes(path.replace(/\/$/, "").toLowerCase());
/**
 * The dashboard's own traffic, logged at debug: its static assets, the fonts the gateway serves it
 * (`dashboard-fonts.ts`) and the API it polls every few seconds while open (`/admin/queues/static/…`,
 * `/admin/queues/fonts/…`, `/admin/queues/api/…`). Its pages and its write actions (clean, remove) stay at info.
 */
export const isDashboardBackground = (method: string, url: string) => {
  if (method !== "GET" && method !== "HEAD") return false;
  const path = url.split("?", 1)[0]!.toLowerCase();
  return ["static", "fonts", "api"].some((dir) => path.startsWith(`${DASHBOARD_PATH}/${dir}/`));
};
/** The HTTP operations answer under both; the prefix before /gms depends on the deployment. */
export const GMS_PATHS = ["/gms", "/api/gms"];

export interface AppDeps {
  logger: Logger;
  authenticator: Authenticator;
  readiness: Readiness;
  services: Services;
  http: GmsDeps;
  /** shown in the queue dashboard */
  queues: Queue[];
  /** GRAPHQL_EXPLORER: GraphiQL on a browser's GET of the GraphQL path */
  graphqlExplorer: boolean;
  /** HTTP_KEEP_ALIVE_TIMEOUT_MS */
  keepAliveTimeoutMs: number;
  /** where stale-tolerant reads run (Database.stale): each request reads as its user, and the metrics show replicas */
  reads?: StaleReads;
}

export interface Gateway {
  app: Express;
  server: Server;
  /** stops Apollo (which drains the HTTP server) */
  stop: () => Promise<void>;
}

/** Apollo would refuse another type as a possible cross-site request forgery, which misleads a curl user. */
const refuseNonJson: RequestHandler = (req, _res, next) => {
  // false: a body of another type, or of none declared; null: no body at all, which Apollo answers itself.
  if (req.is("application/json") === false) {
    throw new AppError("UNSUPPORTED_MEDIA_TYPE", "Content-Type must be application/json.");
  }
  next();
};

/** Builds the gateway: the express app and its HTTP server, not yet listening. */
export async function createGateway(deps: AppDeps): Promise<Gateway> {
  const app = express();
  const server = createServer(app);
  // Node's default (5 s) is below every load balancer's idle timeout, and closes connections clients are reusing.
  server.keepAliveTimeout = deps.keepAliveTimeoutMs;
  app.disable("x-powered-by");
  // express hashes every response body for an ETag, POST answers included; no client of this API revalidates.
  app.set("etag", false);
  app.set("trust proxy", "loopback");
  app.use(securityHeaders());
  const metrics = httpMetrics(
    deps.reads && deps.reads.states().length > 0 ? [replicaMetrics<prom.Registry>(prom, deps.reads)] : [],
  );
  app.use(metrics.record);
  // Health probes and scrapes every few seconds would drown the log.
  app.use(
    requestLogger(deps.logger, {
      ignore: (url) => url === "/health" || url === "/ready" || url === "/metrics",
      hideQuery: isGraphQLPath,
      quiet: isDashboardBackground,
    }),
  );
  addHealthRoutes(app, deps.readiness);
  metrics.serve(app);
  // Pages for browsers: a Basic login prompt, an access token as its password (http/browser-auth.ts).
  app.use(DASHBOARD_PATH, basicChallenge("Queue dashboard"), pageTokenAsBearer("The queue dashboard"));
  app.use(API_DOCS_PATH, basicChallenge("API reference"), pageTokenAsBearer("The API reference"));
  // The GraphQL explorer: its page (a GET) asks a browser for credentials, and its requests (POST) carry them.
  app.get(GRAPHQL_PATHS, basicChallenge("GraphQL explorer"));
  app.use(GRAPHQL_EXPLORER_ASSETS_PATH, basicChallenge("GraphQL explorer"), pageTokenAsBearer("The GraphQL explorer"));
  app.use(GRAPHQL_PATHS, basicTokenAsBearer);
  app.use(authenticate(deps.authenticator, deps.reads));
  if (deps.services.tokenUsage.recording) {
    const matched = (req: Request) => (req.route === undefined ? undefined : routeOf(req));
    const pages = [DASHBOARD_PATH, API_DOCS_PATH, GRAPHQL_EXPLORER_ASSETS_PATH];
    app.use(recordTokenUse(deps.services.tokenUsage.recorder, matched, pages));
  }
  app.use(
    [SESSION_TOKEN_PATH, ...GMS_PATHS.map((base) => `${base}${SESSION_TOKEN_PATH}`)],
    jsonBody(SESSION_BODY_LIMIT_BYTES, { anyType: true }),
  );
  app.use(jsonBody(BODY_LIMIT_BYTES));

  const graphql = await createGraphQLMiddleware({ logger: deps.logger, httpServer: server, services: deps.services });
  // POST only, as in DataHub: a query in the URL (GraphQL over GET) would put what it carries, tokens included, into
  // access logs and browser histories.
  app.post(GRAPHQL_PATHS, refuseNonJson, graphql.middleware);
  // a browser's GET only: the explorer's page; without it, the GET gets the 405 an API client does
  if (deps.graphqlExplorer) {
    app.get(GRAPHQL_PATHS, graphqlExplorerPage());
    app.use(GRAPHQL_EXPLORER_ASSETS_PATH, graphqlExplorerAssets());
  }
  app.all(GRAPHQL_PATHS, (_req, res) => {
    res.setHeader("allow", "POST");
    throw new AppError("METHOD_NOT_ALLOWED", "GraphQL is served over POST only.");
  });
  // One router for every HTTP operation, mounted once for both prefixes, and at the root as DataHub's GMS serves them
  // (its SDK and frontend name the host alone: http://gms:8080/aspects, /auth/generateSessionTokenForUser).
  const gms = Router();
  addGmsRoutes(gms, deps.http);
  addConfigRoute(gms); // DataHub's SDK checks its connection with GET {gms}/config
  app.use(GMS_PATHS, gms);
  app.use(gms);
  // The OpenAPI document of those routes, as the router holds them, and its viewer.
  addOpenApiRoutes(app, GMS_PATHS, () => openApiDocument(apiRoutes(gms), GMS_PATHS));

  const dashboard = queueDashboard(deps.queues, deps.services.engine, deps.services.prisma);
  app.use(DASHBOARD_PATH, dashboard.guard, dashboard.router);

  app.use(notFoundHandler);
  app.use(errorHandler(deps.logger, isGraphQLPath));
  return { app, server, stop: graphql.stop };
}
