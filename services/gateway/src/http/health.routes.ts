import { Router } from "express";
import type { Readiness } from "../readiness";

/** Liveness and readiness: the only routes that answer without credentials. */
export function healthRoutes(readiness: Readiness): Router {
  const router = Router();
  router.get("/health", (_req, res) => {
    res.json({ status: "ok" });
  });
  router.get("/ready", async (_req, res) => {
    const report = await readiness.check();
    res.status(report.ready ? 200 : 503).json(report);
  });
  return router;
}
