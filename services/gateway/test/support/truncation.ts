/**
 * What the truncation tests share (truncation-*.int.spec.ts): the aspects they load, and a task's status as
 * getTaskStatus answers it, and waiting for one of its states.
 */
import type { TimeseriesAspectRef } from "@mdp/db";
import { waitForState } from "../../../../test/support/wait-for-state";
import type { Harness } from "./gateway-harness";

export const PROFILE: TimeseriesAspectRef = { entityType: "dataset", aspectName: "datasetProfile" };
export const USAGE: TimeseriesAspectRef = { entityType: "dataset", aspectName: "datasetUsageStatistics" };
export const CHART: TimeseriesAspectRef = { entityType: "chart", aspectName: "chartUsageStatistics" };
export const T0 = Date.UTC(2026, 0, 1);
export const TRUNCATE = "/gms/operations?action=truncateTimeseriesAspect";

export const taskStatus = async (h: Harness, taskId: string) =>
  (await h.post("/gms/operations?action=getTaskStatus", { taskId })).body.value as Record<string, unknown> & {
    state: string;
  };

/** test/support's waitForState, through getTaskStatus. */
export const waitForTaskState = (h: Harness, taskId: string, states: string[], timeoutMs = 20_000) =>
  waitForState((id) => taskStatus(h, id), taskId, states, timeoutMs);
