import { badInput, type EntityRegistry } from "@mdp/core";
import {
  inTransaction,
  type AspectRepository,
  type Database,
  type TimeseriesRow,
  type TimeseriesStore,
  type VersionedAspectWrite,
} from "@mdp/db";
import type { PoolClient } from "pg";
import type { Actor } from "../auth/actor";
import { numberPostgresCannotStore, refuseServiceWrittenAspect, validateProposal, type Proposal } from "./proposal";

export const MAX_BATCH = 10_000;
/** PostgreSQL's numeric_value_out_of_range */
const NUMERIC_OUT_OF_RANGE = "22003";

/**
 * Metadata ingestion (DataHub's ingestProposal / ingestProposalBatch): everything is validated before anything is
 * written, and a batch commits in one transaction, so a request is stored whole or not at all.
 */
export class IngestionService {
  constructor(
    private readonly db: Database,
    private readonly registry: EntityRegistry,
    private readonly aspects: AspectRepository,
    private readonly timeseries: TimeseriesStore,
  ) {}

  /** Writes `proposals` for a caller its route checked for INGEST_METADATA. */
  async ingest(actor: Actor, proposals: Array<{ proposal: Proposal; at: string }>): Promise<string[]> {
    if (proposals.length > MAX_BATCH) throw badInput(`proposals may hold at most ${MAX_BATCH} proposals`);
    const versioned: VersionedAspectWrite[] = [];
    const series = new Map<string, { entityType: string; aspectName: string; rows: TimeseriesRow[] }>();
    for (const { proposal, at } of proposals) {
      refuseServiceWrittenAspect(proposal, at, actor.urn);
      const valid = validateProposal(proposal, at, this.registry);
      if (valid.kind === "versioned") {
        versioned.push(valid.write);
      } else {
        this.timeseries.checkTimestamp(valid.row.timestampMillis, `${at}.aspect.value.timestampMillis`);
        const key = `${valid.entityType}\u0000${valid.aspectName}`;
        const group = series.get(key) ?? { entityType: valid.entityType, aspectName: valid.aspectName, rows: [] };
        group.rows.push(valid.row);
        series.set(key, group);
      }
    }
    const groups = [...series.values()];
    try {
      await this.writeWithRetry(
        () => this.timeseries.prepare(groups),
        async (client) => {
          // Each version names its writer and the token it came through (DataHub's audit stamp, GET /gms/entities).
          await this.aspects.upsert(client, versioned, actor.urn, actor.tokenId ?? null);
          for (const group of groups) await this.timeseries.append(client, group, group.rows);
        },
      );
    } catch (error) {
      // Stored as sent, an aspect value is parsed by PostgreSQL, whose numbers keep at most 131072 digits before the
      // decimal point and 16383 after: JSON allows 1e-99999, which would otherwise be a 500.
      if ((error as { code?: unknown }).code !== NUMERIC_OUT_OF_RANGE) throw error;
      for (const { proposal, at } of proposals) {
        const number = numberPostgresCannotStore(proposal.aspect.value);
        if (number === undefined) continue;
        throw badInput(
          `${at}.aspect.value holds the number ${number}, which PostgreSQL cannot store (at most 131072 digits before ` +
            `the decimal point and 16383 after it)`,
        );
      }
      throw badInput("An aspect value holds a number PostgreSQL cannot store: " + (error as Error).message);
    }
    return proposals.map((p) => p.proposal.entityUrn);
  }

  /**
   * The day partitions first (see TimeseriesStore.prepare), then one transaction; both again, once, when a partition
   * was dropped (by a truncation) between the two.
   */
  private async writeWithRetry(
    prepare: () => Promise<void>,
    write: (client: PoolClient) => Promise<void>,
  ): Promise<void> {
    await prepare();
    try {
      await inTransaction(this.db.pool, write);
    } catch (error) {
      if (!this.timeseries.isMissingPartition(error)) throw error;
      await prepare();
      await inTransaction(this.db.pool, write);
    }
  }
}
