import type { Router } from "express";

/**
 * `GET {gms}/config`: what DataHub's Python SDK reads when it checks its connection (DataHubRestEmitter.
 * fetch_server_config; docs/datahub-clients.md). Only what it reads, nothing about this deployment:
 * - `noCode: "true"` (a string) tells the SDK it reached GMS, not DataHub's frontend;
 * - no version, so the SDK keeps to the Rest.li ingestion this service serves (from version 1.0.1 on it would switch
 *   to DataHub's OpenAPI, which is not served here);
 * - `telemetry.enabledCli: false`: the SDK sends no telemetry and does not look for DataHub's telemetry entity;
 * - the capabilities this service lacks (stateful ingestion, impact analysis, patch, managed ingestion) are false.
 */
export const GMS_CONFIG = {
  noCode: "true",
  statefulIngestionCapable: false,
  supportsImpactAnalysis: false,
  patchCapable: false,
  managedIngestion: { enabled: false },
  telemetry: { enabledCli: false },
  datahub: { serverType: "metadata-admin", serverEnv: "core" },
} as const;

/** Added to the router of /gms (and /api/gms), behind authentication like every route there. */
export function addConfigRoute(router: Router): void {
  router.get("/config", (_req, res) => {
    res.json(GMS_CONFIG);
  });
}
