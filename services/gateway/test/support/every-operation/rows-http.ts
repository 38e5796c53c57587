/** The authorization matrix's rows (principals.ts's `Row`) for the HTTP routes: metadata, signing in, operations, metadata tests, the queue dashboard. */
import { ENTITY, http, SYSTEM_CLIENT, type Row } from "./principals";

export const HTTP_ROWS: Row[] = [
  // HTTP: metadata
  {
    operation: "POST /aspects?action=ingestProposal",
    needs: "INGEST_METADATA",
    call: http(
      "POST",
      () => "/gms/aspects?action=ingestProposal",
      () => ({
        proposal: {
          entityType: "dataset",
          entityUrn: ENTITY,
          aspectName: "datasetProperties",
          changeType: "UPSERT",
          aspect: { contentType: "application/json", value: JSON.stringify({ description: "matrix" }) },
        },
      }),
    ),
  },
  {
    operation: "POST /aspects?action=ingestProposalBatch",
    needs: "INGEST_METADATA",
    call: http(
      "POST",
      () => "/gms/aspects?action=ingestProposalBatch",
      () => ({
        proposals: [
          {
            entityType: "dataset",
            entityUrn: ENTITY,
            aspectName: "datasetProperties",
            changeType: "UPSERT",
            aspect: { contentType: "application/json", value: JSON.stringify({ description: "matrix" }) },
          },
        ],
      }),
    ),
  },
  {
    operation: "POST /aspects?action=getTimeseriesAspectValues",
    needs: "GET_TIMESERIES_ASPECT",
    call: http(
      "POST",
      () => "/gms/aspects?action=getTimeseriesAspectValues",
      () => ({ urn: ENTITY, entity: "dataset", aspect: "datasetProfile" }),
    ),
  },
  {
    operation: "GET /entities/:urn",
    needs: "GET_ENTITY",
    call: http("GET", () => `/gms/entities/${encodeURIComponent(ENTITY)}`),
  },
  {
    operation: "POST /openapi/v3/entity/:entityName",
    needs: "INGEST_METADATA",
    call: http(
      "POST",
      () => "/gms/openapi/v3/entity/dataset?async=false",
      () => [{ urn: ENTITY, datasetProperties: { value: { description: "matrix" } } }],
    ),
  },
  // DataHub's frontend signing a user in: its system client's credentials, never a token, whatever it may do.
  {
    operation: "POST /auth/generateSessionTokenForUser",
    needs: SYSTEM_CLIENT,
    call: http(
      "POST",
      () => "/auth/generateSessionTokenForUser",
      () => ({ userId: "matrix-session" }),
    ),
  },
  // HTTP: operations
  {
    operation: "POST /operations?action=truncateTimeseriesAspect",
    needs: "TRUNCATE_TIMESERIES_INDEX",
    call: http(
      "POST",
      () => "/gms/operations?action=truncateTimeseriesAspect",
      () => ({ entityType: "dataset", aspect: "datasetProfile", endTimeMillis: 1 }),
    ),
  },
  {
    operation: "POST /operations?action=getIndexSizes",
    needs: "GET_TIMESERIES_INDEX_SIZES",
    call: http("POST", () => "/gms/operations?action=getIndexSizes"),
  },
  {
    operation: "POST /operations?action=getTaskStatus",
    needs: "GET_TASK_STATUS",
    call: http(
      "POST",
      () => "/gms/operations?action=getTaskStatus",
      (f) => ({ taskId: f.truncationTask }),
    ),
  },
  {
    operation: "POST /operations?action=getEsTaskStatus",
    needs: "GET_TASK_STATUS",
    call: http(
      "POST",
      () => "/gms/operations?action=getEsTaskStatus",
      (f) => ({ task: f.truncationTask }),
    ),
  },
  {
    operation: "GET /operations/tasks/:taskId",
    needs: "GET_TASK_STATUS",
    call: http("GET", (f) => `/gms/operations/tasks/${f.truncationTask}`),
  },
  {
    operation: "POST /operations?action=listTasks",
    needs: "GET_TASK_STATUS",
    call: http("POST", () => "/gms/operations?action=listTasks"),
  },
  {
    operation: "POST /operations?action=rethrottleTask",
    use: "a truncation (the same privilege as cancelTask)",
    needs: "TRUNCATE_TIMESERIES_INDEX",
    call: http(
      "POST",
      () => "/gms/operations?action=rethrottleTask",
      (f) => ({ taskId: f.truncationTask, rowsPerSecond: 1000 }),
    ),
  },
  {
    operation: "POST /operations?action=cancelTask",
    use: "a truncation",
    needs: "TRUNCATE_TIMESERIES_INDEX",
    call: http(
      "POST",
      () => "/gms/operations?action=cancelTask",
      (f) => ({ taskId: f.truncationTask }),
    ),
  },
  // HTTP: metadata tests
  {
    operation: "POST /test?action=evaluate",
    needs: "VIEW_TESTS",
    call: http(
      "POST",
      () => "/gms/test?action=evaluate",
      (f) => ({ urn: ENTITY, testUrns: [f.test] }),
    ),
  },
  {
    operation: "POST /test?action=evaluate",
    use: "with push",
    needs: "MANAGE_TESTS",
    call: http(
      "POST",
      () => "/gms/test?action=evaluate",
      (f) => ({ urn: ENTITY, testUrns: [f.test], push: true }),
    ),
  },
  {
    operation: "POST /test?action=batchEvaluate",
    needs: "VIEW_TESTS",
    call: http(
      "POST",
      () => "/gms/test?action=batchEvaluate",
      (f) => ({ urns: [ENTITY], testUrns: [f.test] }),
    ),
  },
  // The queue dashboard
  {
    operation: "GET /admin/queues/api/queues",
    needs: "MANAGE_SYSTEM_OPERATIONS",
    call: http("GET", () => "/admin/queues/api/queues"),
  },
];
