import type { Router } from "express";
import { z } from "zod";
import { badInput, notFound, parseUrnField, type EntityRegistry } from "@mdp/core";
import { MAX_VALUES_PER_READ, type AspectRepository, type Database, type TimeseriesStore } from "@mdp/db";
import { actorOf } from "../auth/auth.middleware";
import { addActions } from "../http/action-router";
import { standingTestResults } from "../metadata-tests/standing-results";
import { parseBody } from "../http/validate";
import type { PolicyEngine } from "../policies/policy-engine";
import type { IngestionService } from "./ingestion.service";
import { proposalSchema } from "./proposal";

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

/** Ingestion and reads (CONTRACT.md "Metadata ingestion and reads"), added to the router of /gms and /api/gms. */
export function addMetadataRoutes(router: Router, deps: MetadataDeps): void {
  addActions(router, "/aspects", {
    ingestProposal: async (body, actor) => {
      const { proposal } = parseBody(z.strictObject({ proposal: proposalSchema }), body);
      const [urn] = await deps.ingestion.ingest(actor, [{ proposal, at: "proposal" }]);
      return urn;
    },
    ingestProposalBatch: async (body, actor) => {
      const { proposals } = parseBody(z.strictObject({ proposals: z.array(proposalSchema).min(1) }), body);
      return deps.ingestion.ingest(
        actor,
        proposals.map((proposal, i) => ({ proposal, at: `proposals[${i}]` })),
      );
    },
    getTimeseriesAspectValues: async (body, actor) => {
      // Before anything is looked up: a caller without it learns nothing, not even which urns or aspects exist.
      await deps.engine.require(actor, "GET_TIMESERIES_ASPECT", "get time-series aspect values");
      const request = parseBody(valuesRequest, body);
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
        })),
      };
    },
  });
  router.get("/entities/:urn", async (req, res) => {
    await deps.engine.require(actorOf(res.locals), "GET_ENTITY", "get entities");
    const urn = req.params.urn;
    parseUrnField("urn", urn);
    const entity = await deps.aspects.latest(deps.db.pool, urn);
    if (!entity) throw notFound(`Entity ${urn} does not exist`);
    const { testResults } = entity.aspects;
    if (testResults !== undefined) {
      entity.aspects.testResults = await standingTestResults(deps.db.pool, entity.entityType, testResults);
    }
    res.json({ value: { urn, entityType: entity.entityType, aspects: entity.aspects } });
  });
}
