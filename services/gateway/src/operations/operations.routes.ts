import type { Router } from "express";
import { z } from "zod";
import type { EntityRegistry } from "@mdp/core";
import type { TimeseriesStore } from "@mdp/db";
import { addActions } from "../http/action-router";
import { parseBody } from "../http/validate";
import { actorOf } from "../auth/auth.middleware";
import type { PolicyEngine } from "../policies/policy-engine";
import type { TaskService } from "./task.service";
import type { TruncationService } from "./truncation.service";

export interface OperationsDeps {
  registry: EntityRegistry;
  timeseries: TimeseriesStore;
  engine: PolicyEngine;
  truncation: TruncationService;
  tasks: TaskService;
}

const taskRequest = z.strictObject({ taskId: z.string({ error: "is required (a string)" }).min(1) });

const MB = 1024 * 1024;

/** System operations under /gms/operations (CONTRACT.md "HTTP operations"), added to the router of /gms. */
export function addOperationsRoutes(router: Router, deps: OperationsDeps): void {
  router.get("/operations/tasks/:taskId", async (req, res) => {
    res.json({ value: await deps.tasks.status(actorOf(res.locals), req.params.taskId) });
  });
  addActions(router, "/operations", {
    truncateTimeseriesAspect: (body, actor) => deps.truncation.truncate(actor, body),
    getTaskStatus: (body, actor) => deps.tasks.status(actor, parseBody(taskRequest, body).taskId),
    cancelTask: (body, actor) => deps.tasks.cancel(actor, parseBody(taskRequest, body).taskId),
    getIndexSizes: async (body, actor) => {
      await deps.engine.require(actor, "GET_TIMESERIES_INDEX_SIZES", "get time-series index sizes");
      parseBody(z.strictObject({}), body ?? {});
      const registered = new Map(
        deps.registry.timeseriesIndexes().map((i) => [`${i.entityType}\u0000${i.aspectName}`, i]),
      );
      const sizes = await deps.timeseries.sizes();
      return {
        indexSizes: sizes.flatMap((s) => {
          const index = registered.get(`${s.entityType}\u0000${s.aspectName}`);
          if (!index) return []; // data of an aspect no longer in the registry
          return [
            {
              indexName: index.indexName,
              entityName: s.entityType,
              aspectName: s.aspectName,
              rowCount: s.rowCount,
              sizeInMb: Math.round((s.sizeBytes / MB) * 100) / 100,
              oldestTimestampMillis: s.oldestTimestampMillis,
              newestTimestampMillis: s.newestTimestampMillis,
            },
          ];
        }),
      };
    },
  });
}
