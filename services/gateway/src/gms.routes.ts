import { Router } from "express";
import { apiRoutes, type ApiRoute } from "./http/action-router";
import { addMetadataRoutes, type MetadataDeps } from "./metadata/metadata.routes";
import { addTestRoutes, type TestRoutesDeps } from "./metadata-tests/test.routes";
import { addOperationsRoutes, type OperationsDeps } from "./operations/operations.routes";
import { addSessionRoute, type SessionTokens } from "./tokens/session-tokens";

export type GmsDeps = MetadataDeps & OperationsDeps & TestRoutesDeps & { sessions: SessionTokens };

/** Every HTTP operation under /gms (and /api/gms): one router, mounted once for both prefixes. */
export function addGmsRoutes(router: Router, deps: GmsDeps): void {
  addMetadataRoutes(router, deps);
  addOperationsRoutes(router, deps);
  addTestRoutes(router, deps);
  addSessionRoute(router, deps.sessions);
}

/**
 * The routes addGmsRoutes adds, without a gateway: handlers are only declared, never called, so no dependency is
 * needed (what `pnpm api:write` documents; the gateway serves the same from its own router).
 */
export function describeGmsRoutes(): readonly ApiRoute[] {
  const router = Router();
  addGmsRoutes(router, {} as GmsDeps);
  return apiRoutes(router);
}
