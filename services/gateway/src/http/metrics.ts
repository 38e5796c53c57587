import type { Express, Request, RequestHandler } from "express";
import { collectDefaultMetrics, Histogram, Registry } from "prom-client";
import { tokenMetricsRegistry } from "../tokens/token-metrics";

/**
 * Prometheus metrics at `GET /metrics`, which the contract leaves open like /health and /ready (a scraper holds no
 * token, and every number is an aggregate): node's own (CPU, memory, event loop lag, GC), every request's duration by
 * method, route, action and status, and token verifications (tokens/token-metrics.ts).
 * The route is the pattern the request matched (`/gms/test`, `/api/graphql`, `/gms/entities/:urn`), never the raw
 * path, so a label cannot take one value per urn or task id. The action is what the request asked the route to do
 * (actionLabel): values from fixed sets only.
 */
export function httpMetrics(extra: readonly Registry[] = []): {
  record: RequestHandler;
  serve: (app: Express) => void;
} {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const duration = new Histogram({
    name: "http_request_duration_seconds",
    help: "Duration of HTTP requests, by method, matched route, action and status code",
    labelNames: ["method", "route", "action", "status"] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [registry],
  });
  // A backstop: whatever routing lets through, no client can create more series than this.
  const routes = new Set<string>();
  const bounded = (route: string) => {
    if (routes.has(route)) return route;
    if (routes.size >= MAX_ROUTE_LABELS) return "other";
    routes.add(route);
    return route;
  };
  const record: RequestHandler = (req, res, next) => {
    const started = process.hrtime.bigint();
    res.once("finish", () => {
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      const labels = {
        method: req.method,
        route: bounded(routeOf(req)),
        action: actionLabel(req, res.locals),
        status: res.statusCode,
      };
      duration.observe(labels, seconds);
    });
    next();
  };
  const served = Registry.merge([registry, tokenMetricsRegistry, ...extra]);
  const serve = (app: Express) =>
    app.get("/metrics", (_req, res, next) => {
      served
        .metrics()
        .then((text) => res.type(registry.contentType).send(text))
        .catch(next);
    });
  return { record, serve };
}

/**
 * The `action` label: a `?action=` route's action as its router dispatched it (action-router.ts sets
 * `res.locals.action` only for one of the route's own actions), GraphQL's operation type (`query`, `mutation`: set by
 * the server's plugin once the document is parsed), `unknown` for a `?action=` no route took (a caller may send any
 * text there: it never becomes a label value) and `none` for every other request.
 */
function actionLabel(req: Request, locals: Record<string, unknown>): string {
  if (typeof locals.action === "string") return locals.action;
  return req.query.action !== undefined ? "unknown" : "none";
}

/** More distinct route labels than the gateway has routes (a few dozen with the dashboard's) */
const MAX_ROUTE_LABELS = 200;

/**
 * The route's pattern under its mount point, e.g. `/api/gms/entities/:urn`. The mount point is what precedes the
 * route's own segments in the URL: req.baseUrl is no longer set once an error has left the router.
 */
export function routeOf(req: Request): string {
  const path = (req.route as { path?: string | string[] } | undefined)?.path;
  if (path === undefined) return "unmatched"; // answered before any route, e.g. a 401
  // A URL spelled exactly as one of the route's paths (`/api/graphql`, most requests) is its own label.
  if (path === req.originalUrl || (Array.isArray(path) && path.includes(req.originalUrl))) return req.originalUrl;
  // Routes match whatever the letter case (and `//`, a trailing slash): the label is the lower-case, single-slash
  // form, so `/GMS/operations` and `/gms/operations` are one series, not one per spelling a client invents.
  const url = req.originalUrl
    .split("?", 1)[0]!
    .toLowerCase()
    .replace(/\/{2,}/g, "/")
    .replace(/\/$/, "");
  // Of a route with several paths, the one this request took.
  const taken = Array.isArray(path) ? (path.find((p) => url.endsWith(p)) ?? path[0]!) : path;
  const segments = url.split("/");
  return `${segments.slice(0, segments.length - (taken.split("/").length - 1)).join("/")}${taken}`;
}
