import type { Express } from "express";
import type { Readiness } from "../readiness";

/** Liveness and readiness: the only routes that answer without credentials. Added to the app itself, not a router. */
export function addHealthRoutes(app: Express, readiness: Readiness): void {
  app.get("/health", (_req, res) => {
    res.json({ status: "ok" });
  });
  app.get("/ready", async (_req, res) => {
    const report = await readiness.check();
    res.status(report.ready ? 200 : 503).json(report);
  });
}
