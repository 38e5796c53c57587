/**
 * What the truncation tests share (truncation-*.int.spec.ts): the aspects they load, and a task's status as
 * getTaskStatus answers it, and waiting for one of its states.
 */
import type { TimeseriesAspectRef } from "@mdp/db";
import { eventually } from "@mdp/core/testing";
import type { Harness } from "./gateway-harness";

export const PROFILE: TimeseriesAspectRef = { entityType: "dataset", aspectName: "datasetProfile" };
export const USAGE: TimeseriesAspectRef = { entityType: "dataset", aspectName: "datasetUsageStatistics" };
export const CHART: TimeseriesAspectRef = { entityType: "chart", aspectName: "chartUsageStatistics" };
export const T0 = Date.UTC(2026, 0, 1);
export const TRUNCATE = "/gms/operations?action=truncateTimeseriesAspect";

export const taskStatus = async (h: Harness, taskId: string) =>
  (await h.post("/gms/operations?action=getTaskStatus", { taskId })).body.value as Record<string, unknown>;

export const waitForTaskState = (h: Harness, taskId: string, states: string[], timeoutMs = 20_000) =>
  eventually(`task ${taskId} ${states.join(" or ")}`, () => taskStatus(h, taskId), {
    timeoutMs,
    until: (s) => states.includes(s.state as string),
  });
