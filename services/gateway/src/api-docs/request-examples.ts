/**
 * The example request of every HTTP operation, by its operationId: what Swagger UI's "Try it out" prefills, so each
 * must be accepted as it is (openapi.ts parses each with its route's schema and refuses to build a document otherwise;
 * test/api-docs.int.spec.ts sends them all, in document order, to a fresh gateway). Without one, Swagger UI makes a body
 * up from the schema: `"string"` for every text and `true` for every flag, which a truncation refuses.
 *
 * They follow docs/api.md's walkthrough: ingestProposal creates the dataset that the reads, the dry run and the
 * evaluation then name. A task id is the one thing a fresh system cannot hold: the example is one's shape only.
 */
const DATASET = "urn:li:dataset:(urn:li:dataPlatform:hive,sales.orders,PROD)";
const TASK_ID = "df0c8103-5c1e-4b8a-9a53-2f0d6c1e7b42";
const PROFILE_AT = 1763900000000;

/** The operations whose example names a task id: a fresh system answers them 404 until a task exists. */
export const EXAMPLE_TASK_ID = TASK_ID;

/** The body of each action (POST), by operationId; of a POST route, its `{params, query, body}`. */
export const REQUEST_EXAMPLES: Readonly<Record<string, unknown>> = {
  ingestProposal: {
    proposal: {
      entityType: "dataset",
      entityUrn: DATASET,
      aspectName: "datasetProperties",
      changeType: "UPSERT",
      aspect: { contentType: "application/json", value: '{"description":"Orders placed in the web shop"}' },
    },
  },
  ingestProposalBatch: {
    proposals: [
      {
        entityType: "dataset",
        entityUrn: DATASET,
        aspectName: "datasetProfile",
        changeType: "UPSERT",
        aspect: {
          contentType: "application/json",
          value: `{"timestampMillis":${PROFILE_AT},"rowCount":1200,"columnCount":8}`,
        },
      },
    ],
  },
  getTimeseriesAspectValues: { urn: DATASET, entity: "dataset", aspect: "datasetProfile", limit: 10 },
  truncateTimeseriesAspect: {
    entityType: "dataset",
    aspect: "datasetProfile",
    endTimeMillis: PROFILE_AT + 86_400_000,
    dryRun: true,
  },
  getTaskStatus: { taskId: TASK_ID },
  getEsTaskStatus: { task: TASK_ID },
  cancelTask: { taskId: TASK_ID },
  rethrottleTask: { taskId: TASK_ID, rowsPerSecond: 5_000 },
  listTasks: { type: "TRUNCATE_TIMESERIES", count: 20 },
  getIndexSizes: {},
  evaluate: { urn: DATASET },
  batchEvaluate: { urns: [DATASET] },
  // DataHub's OpenAPI v3, as its SDK sends it: `{params, query, body}`, the body a list of entities.
  postOpenapiV3EntityEntityName: {
    params: { entityName: "dataset" },
    query: { async: "false", systemMetadata: "false", createIfEntityNotExists: "false", createIfNotExists: "false" },
    body: [
      {
        urn: DATASET,
        datasetProfile: {
          value: { timestampMillis: PROFILE_AT + 3_600_000, rowCount: 1250, columnCount: 8 },
          systemMetadata: { lastObserved: PROFILE_AT + 3_600_000, runId: "no-run-id-provided" },
        },
      },
    ],
  },
};

/** The path parameters of each GET route, by operationId. */
export const PARAMETER_EXAMPLES: Readonly<Record<string, Readonly<Record<string, string>>>> = {
  getEntitiesUrn: { urn: DATASET },
  getOperationsTasksTaskId: { taskId: TASK_ID },
};
