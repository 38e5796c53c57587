import type { Router } from "express";
import { z } from "zod";
import { badInput, notFound, parseUrnField, type EntityRegistry } from "@mdp/core";
import { MAX_VALUES_PER_READ, type AspectRepository, type Database, type TimeseriesStore } from "@mdp/db";
import { action, addActions, addGetRoute, addPostRoute } from "../http/action-router";
import { standingTestResults } from "../metadata-tests/standing-results";
import type { PolicyEngine } from "../policies/policy-engine";
import { MAX_BATCH, type IngestionService } from "./ingestion.service";
import { asyncFlag, proposalHeadersSchema, proposalSchema, systemMetadataSchema, type Proposal } from "./proposal";

export interface MetadataDeps {
  db: Database;
  registry: EntityRegistry;
  aspects: AspectRepository;
  timeseries: TimeseriesStore;
  ingestion: IngestionService;
  engine: PolicyEngine;
}

const valuesRequest = z.strictObject({
  urn: z.string().min(1),
  entity: z.string().min(1),
  aspect: z.string().min(1),
  startTimeMillis: z.number().int().nonnegative().optional(),
  endTimeMillis: z.number().int().nonnegative().optional(),
  limit: z
    .number()
    .int()
    .min(1)
    .max(MAX_VALUES_PER_READ, { error: `must be at most ${MAX_VALUES_PER_READ} (rows one read returns)` })
    .default(100),
});

const ingestProposalRequest = z.strictObject({ proposal: proposalSchema, async: asyncFlag });
const ingestProposalBatchRequest = z.strictObject({ proposals: z.array(proposalSchema).min(1), async: asyncFlag });

/** DataHub's OpenAPI v3 flags as query text; its emitter sends `async` only. */
const flag = z.enum(["true", "false"]);
/** One aspect of an entity in DataHub's OpenAPI v3 body: `{value, systemMetadata, headers}`. */
const openApiAspect = z.strictObject({
  value: z.record(z.string(), z.unknown()).describe("the aspect, as JSON (not JSON text)"),
  systemMetadata: systemMetadataSchema.nullish().describe("kept with the version or row written, as in ingestProposal"),
  headers: proposalHeadersSchema.nullish(),
});
/** One entity of the body: its urn, and each aspect written under its name. */
const openApiEntity = z
  .object({ urn: z.string().min(1) })
  .catchall(openApiAspect)
  .refine((item) => Object.keys(item).length > 1, { error: "names no aspect: give at least one, by its name" });
const openApiEntityRequest = z.object({
  params: z.object({ entityName: z.string().min(1).max(100) }),
  query: z.strictObject({
    async: flag.optional().describe("accepted; writes are always committed before the answer"),
    systemMetadata: flag.optional().describe("true: the answer repeats each aspect's systemMetadata"),
    createIfEntityNotExists: z.literal("false", { error: "true is not supported: writes here are upserts" }).optional(),
    createIfNotExists: z.literal("false", { error: "true is not supported: writes here are upserts" }).optional(),
  }),
  body: z
    .array(openApiEntity)
    .min(1)
    .max(MAX_BATCH, { error: `must hold at most ${MAX_BATCH} entities` }),
});
const openApiEntityAnswer = z
  .array(z.record(z.string(), z.unknown()))
  .describe("each entity of the request, in order: its urn and each aspect written, `{value, systemMetadata}`");
const entityRequest = z.strictObject({ urn: z.string().min(1) });
const aspectValue = z.object({
  contentType: z.string().describe("application/json"),
  value: z.string().describe("the aspect as JSON text"),
});
const valuesAnswer = z.object({
  entityName: z.string(),
  aspectName: z.string(),
  limit: z.number().int(),
  values: z
    .array(
      z.object({
        timestampMillis: z.number().int(),
        aspect: aspectValue,
        systemMetadata: z
          .record(z.string(), z.unknown())
          .optional()
          .describe("the systemMetadata the row was ingested with (DataHub's); absent when none was sent"),
      }),
    )
    .describe("newest first"),
});
/** DataHub's AuditStamp (com.linkedin.common.AuditStamp): when, and who is credited with the change. */
const auditStamp = z.object({
  time: z.number().int().describe("epoch ms"),
  actor: z.string().describe("the user who wrote it (the system actor for the system client without an actor)"),
});
const aspectStamp = z.object({
  version: z.number().int().describe("the aspect's version (1, 2, ...): the latest"),
  created: auditStamp.describe("DataHub's EnvelopedAspect `created`: who wrote this version, and when"),
  createdVia: z
    .string()
    .optional()
    .describe("the id of the access token it was written through; absent when none was used (the system client)"),
  systemMetadata: z
    .record(z.string(), z.unknown())
    .optional()
    .describe("the systemMetadata this version was ingested with (DataHub's EnvelopedAspect); absent when none was"),
});
const entityAnswer = z.object({
  urn: z.string(),
  entityType: z.string(),
  aspects: z.record(z.string(), z.unknown()).describe("each versioned aspect's latest value, by aspect name"),
  stamps: z
    .record(z.string(), aspectStamp)
    .describe("each aspect's latest version and who wrote it (DataHub's audit stamp), by aspect name"),
});
const ingest = { privilege: "INGEST_METADATA", to: "ingest metadata" } as const;
const ingestNote =
  "Nobody may ingest an aspect only the service writes (`testResults`): 403, and nothing of the request is stored.";

/** Ingestion and reads (docs/api.md), added to the router of /gms and /api/gms. */
export function addMetadataRoutes(router: Router, deps: MetadataDeps): void {
  addActions(router, "/aspects", deps.engine, {
    ingestProposal: action({
      summary: "Write one aspect of one entity",
      description:
        "Validated against the entity registry; a versioned aspect replaces the entity's latest, a time-series " +
        "aspect adds a row at its timestampMillis. Answers the entity's urn.",
      requires: ingest,
      privilegeNote: ingestNote,
      request: ingestProposalRequest,
      response: z.string().describe("the entity's urn"),
      handler: async ({ proposal }, actor) => {
        const [urn] = await deps.ingestion.ingest(actor, [{ proposal, at: "proposal" }]);
        return urn!; // one urn per proposal
      },
    }),
    ingestProposalBatch: action({
      summary: "Write several aspects in one transaction",
      description:
        "All or nothing: one refused proposal (named `proposals[i]`) stores none. Answers the urns in order.",
      requires: ingest,
      privilegeNote: ingestNote,
      request: ingestProposalBatchRequest,
      response: z.array(z.string()).describe("each proposal's entity urn, in order"),
      handler: ({ proposals }, actor) =>
        deps.ingestion.ingest(
          actor,
          proposals.map((proposal, i) => ({ proposal, at: `proposals[${i}]` })),
        ),
    }),
    getTimeseriesAspectValues: action({
      summary: "Read an entity's time-series rows, newest first",
      // Before anything is looked up: a caller without it learns nothing, not even which urns or aspects exist.
      requires: { privilege: "GET_TIMESERIES_ASPECT", to: "get time-series aspect values" },
      request: valuesRequest,
      response: valuesAnswer,
      readOnly: true,
      handler: async (request) => {
        parseUrnField("urn", request.urn, request.entity);
        if (
          deps.registry.aspectKind(request.entity, request.aspect, { entityType: "entity", aspectName: "aspect" }) !==
          "timeseries"
        ) {
          throw badInput(`aspect '${request.aspect}' of ${request.entity} is not a time-series aspect`);
        }
        const values = await deps.timeseries.values(
          { entityType: request.entity, aspectName: request.aspect },
          request.urn,
          request,
        );
        return {
          entityName: request.entity,
          aspectName: request.aspect,
          limit: request.limit,
          values: values.map((v) => ({
            timestampMillis: v.timestampMillis,
            aspect: { contentType: "application/json", value: v.valueJson },
            ...(v.systemMetadataJson !== undefined && {
              systemMetadata: JSON.parse(v.systemMetadataJson) as Record<string, unknown>,
            }),
          })),
        };
      },
    }),
  });
  addGetRoute(router, "/entities/:urn", deps.engine, {
    summary: "Read an entity's latest versioned aspects, and who wrote each",
    description:
      "`testResults`, when present, holds only the results of tests that still exist and still apply. `stamps` says " +
      "who wrote each aspect's latest version, when, and through which access token.",
    requires: { privilege: "GET_ENTITY", to: "get entities" },
    request: entityRequest,
    response: entityAnswer,
    handler: async ({ urn }) => {
      parseUrnField("urn", urn);
      const entity = await deps.aspects.latest(deps.db.pool, urn);
      if (!entity) throw notFound(`Entity ${urn} does not exist`);
      const { testResults } = entity.aspects;
      if (testResults !== undefined) {
        entity.aspects.testResults = await standingTestResults(deps.db.pool, entity.entityType, testResults);
      }
      const stamps = Object.fromEntries(
        Object.entries(entity.stamps).map(([name, stamp]) => [
          name,
          {
            version: stamp.version,
            created: { time: stamp.createdAt, actor: stamp.createdBy },
            ...(stamp.createdVia !== null && { createdVia: stamp.createdVia }),
            ...(stamp.systemMetadata != null && { systemMetadata: stamp.systemMetadata as Record<string, unknown> }),
          },
        ]),
      );
      return { urn, entityType: entity.entityType, aspects: entity.aspects, stamps };
    },
  });
  addPostRoute(router, "/openapi/v3/entity/:entityName", deps.engine, {
    summary: "Write aspects of entities of one type (DataHub's OpenAPI v3)",
    description:
      "What DataHub's Python SDK sends with `openapi_ingestion` (POST /openapi/v3/entity/<entityName>): a list of " +
      "`{urn, <aspectName>: {value, systemMetadata, headers}}`, written as ingestProposalBatch writes (every aspect " +
      "an UPSERT, all in one transaction, `systemMetadata` kept). Answers the entities as written, in order.",
    requires: ingest,
    privilegeNote: ingestNote,
    request: openApiEntityRequest,
    response: openApiEntityAnswer,
    handler: async ({ params, query, body }, actor) => {
      const entityType = registeredEntityType(deps.registry, params.entityName);
      const proposals: Array<{ proposal: Proposal; at: string }> = [];
      for (const [i, { urn, ...aspects }] of body.entries()) {
        for (const [aspectName, aspect] of Object.entries(aspects)) {
          proposals.push({
            at: `body[${i}].${aspectName}`,
            proposal: {
              entityType,
              entityUrn: urn,
              aspectName,
              changeType: "UPSERT",
              aspect: { contentType: "application/json", value: JSON.stringify(aspect.value) },
              systemMetadata: aspect.systemMetadata,
              headers: aspect.headers,
            },
          });
        }
      }
      await deps.ingestion.ingest(actor, proposals);
      return body.map(({ urn, ...aspects }) => ({
        urn,
        ...Object.fromEntries(
          Object.entries(aspects).map(([name, aspect]) => [
            name,
            {
              value: aspect.value,
              ...(query.systemMetadata === "true" &&
                aspect.systemMetadata && { systemMetadata: aspect.systemMetadata }),
            },
          ]),
        ),
      }));
    },
  });
}

/**
 * The registry's entity type a path names: DataHub's paths spell them in lower case (`datajob`) as well as its way
 * (`dataJob`). Another casing means a type only when exactly one registered type is spelled so.
 */
function registeredEntityType(registry: EntityRegistry, name: string): string {
  const types = registry.entityTypes();
  if (types.includes(name)) return name;
  const alike = types.filter((t) => t.toLowerCase() === name.toLowerCase());
  if (alike.length === 1) return alike[0]!;
  registry.aspectsOf(name, "params.entityName"); // throws the 400 naming the valid types
  return name;
}
