import type pg from "pg";
import type { PrismaClient } from "../generated/prisma/client";
import type { Queryable } from "../timeseries/timeseries.store";
import { metadataChangeLogInsert } from "../events/platform-event.repository";

export interface VersionedAspectWrite {
  urn: string;
  entityType: string;
  aspectName: string;
  /**
   * JSON text of the aspect value: one JSON value, as JSON.stringify writes it or as a request's validated body held it
   * (the upsert sends the batch's values inside one JSON array, unescaped)
   */
  valueJson: string;
  /** who wrote this version, when not the `createdBy` of the whole upsert */
  createdBy?: string;
  /** the access token `createdBy` wrote it through (null or absent: none, e.g. the system client); read with createdBy */
  createdVia?: string | null;
  /** the proposal's systemMetadata as JSON text (DataHub's SystemMetadata), kept with the version; absent: none */
  systemMetadataJson?: string;
  /**
   * the aspect's latest version (0: none), read by the caller in this transaction after taking its lock, so none can
   * have been written since: the upsert does not look it up again (runTest's batch read brings it). Absent: looked up.
   */
  currentVersion?: number;
}

/** Who wrote an aspect's version, when, and through which access token: DataHub's audit stamp, as stored. */
export interface AspectStamp {
  version: number;
  /** epoch ms */
  createdAt: number;
  createdBy: string;
  /** the access token's id; null when it was written without one (the system client, a service write) */
  createdVia: string | null;
  /** the systemMetadata its writer sent with it (DataHub's SystemMetadata); null when none was sent */
  systemMetadata: unknown;
}

/**
 * Versioned aspects: every upsert adds a version (1, 2, ...) and keeps the earlier ones; the highest version is the
 * current value. Plain SQL on pg, because a batch of a thousand writes must be a handful of statements.
 */
export class AspectRepository {
  /**
   * Writes new versions inside the caller's transaction. Writers of the same (urn, aspect) are serialized by an
   * advisory lock taken in a fixed order (no deadlocks), so concurrent upserts never compute the same version.
   */
  async upsert(
    client: pg.ClientBase,
    writes: VersionedAspectWrite[],
    createdBy: string,
    createdVia: string | null = null,
    /** where the writes come from, in their events' systemMetadata.properties.appSource (DataHub's field) */
    appSource: string | null = null,
    /** the caller took these writes' locks (`lock`) in this transaction: not taken again (a round trip per batch) */
    locked = false,
  ): Promise<void> {
    if (writes.length === 0) return;
    if (!locked) await this.lock(client, writes);
    // Neither a urn nor an aspect name holds a NUL (PostgreSQL cannot store one): a key without a JSON text per write.
    const keyOf = (w: VersionedAspectWrite) => `${w.urn}\u0000${w.aspectName}`;
    // Several versions of one aspect in one batch apply in order: the n-th gets max + n (max: the write's
    // currentVersion when its caller read it under the lock, else looked up; the lookup's one-time filter skips it).
    // A write with its currentVersion counts n over the whole batch; one looked up counts within its statement, whose
    // lookup sees the versions the batch's earlier statements wrote.
    const seen = new Map<string, number>();
    for (const chunk of byValueText(writes, AspectRepository.maxValueTextPerStatement)) {
      const seenHere = new Map<string, number>();
      const ordinals = chunk.map((w) => {
        const key = keyOf(w);
        const inBatch = (seen.get(key) ?? 0) + 1;
        const inStatement = (seenHere.get(key) ?? 0) + 1;
        seen.set(key, inBatch);
        seenHere.set(key, inStatement);
        return w.currentVersion !== undefined ? inBatch : inStatement;
      });
      await this.insertVersions(client, chunk, ordinals, createdBy, createdVia, appSource);
    }
  }

  /**
   * The most value text one statement sends, in characters (at most 192 MiB of UTF-8): PostgreSQL refuses a jsonb
   * array whose elements pass 256 MB, so a larger batch goes in several statements of the caller's one transaction.
   */
  static maxValueTextPerStatement = 64 * 1024 * 1024;

  private async insertVersions(
    client: pg.ClientBase,
    writes: readonly VersionedAspectWrite[],
    ordinals: readonly number[],
    createdBy: string,
    createdVia: string | null,
    appSource: string | null,
  ): Promise<void> {
    // Each version and its MetadataChangeLog_v1 event in the platform-event outbox, in one statement of the caller's
    // transaction: the event commits exactly when the version does (events/platform-event.repository.ts).
    await client.query(
      `WITH written AS (
         INSERT INTO aspect (urn, aspect_name, version, entity_type, value, created_by, created_via, system_metadata)
         SELECT d.urn, d.aspect_name, COALESCE(d.current_version, m.version, 0) + d.ordinal, d.entity_type, d.value,
                d.created_by, d.created_via, d.system_metadata::jsonb
           FROM ROWS FROM (unnest($1::text[]), unnest($2::text[]), unnest($3::text[]), jsonb_array_elements($4::jsonb),
                           unnest($5::int[]), unnest($6::text[]), unnest($7::text[]), unnest($9::text[]),
                           unnest($10::int[]))
                AS d(urn, aspect_name, entity_type, value, ordinal, created_by, created_via, system_metadata,
                     current_version)
           LEFT JOIN LATERAL (
             SELECT max(a.version) AS version FROM aspect a
              WHERE d.current_version IS NULL AND a.urn = d.urn AND a.aspect_name = d.aspect_name
           ) m ON true
         RETURNING urn, aspect_name, entity_type, version, created_by, created_at)
       ${metadataChangeLogInsert("written", "$8::text")}`,
      [
        writes.map((w) => w.urn),
        writes.map((w) => w.aspectName),
        writes.map((w) => w.entityType),
        // The values as one JSON array of their texts: pg escapes every element of a text[] with regular expressions
        // in JavaScript (half the client's cost of a batch of a thousand), PostgreSQL parses the values either way.
        `[${writes.map((w) => w.valueJson).join(",")}]`,
        ordinals,
        writes.map((w) => w.createdBy ?? createdBy),
        // a write naming its own writer names its own token too, so a version never pairs one writer with another's
        writes.map((w) => (w.createdBy !== undefined ? (w.createdVia ?? null) : createdVia)),
        appSource,
        writes.map((w) => w.systemMetadataJson ?? null),
        writes.map((w) => w.currentVersion ?? null),
      ],
    );
  }

  /**
   * Takes the write lock of each (urn, aspect) until the caller's transaction ends: the one upsert takes, so a caller
   * can read, merge and write an aspect without a concurrent writer slipping in between (read-modify-write). The lock
   * is re-entrant within the transaction, so the upsert that follows does not wait on it.
   */
  async lock(client: pg.ClientBase, aspects: ReadonlyArray<{ urn: string; aspectName: string }>): Promise<void> {
    if (aspects.length === 0) return;
    const keys = [...new Set(aspects.map((a) => JSON.stringify([a.urn, a.aspectName])))];
    // Locks are taken in one order (the subquery's ORDER BY: the locks are evaluated after its sort) by every writer,
    // so two writers cannot deadlock. One row back, a count, rather than a row per lock for pg to parse. The keys
    // travel as one JSON text (JSON.stringify escapes their quotes natively, where pg's text[] escaping runs regular
    // expressions per key); each is the same text, so the same lock, as before.
    await client.query(
      "SELECT count(*)::int AS locked FROM (SELECT pg_advisory_xact_lock(hashtext(k)) FROM jsonb_array_elements_text($1::jsonb) AS k ORDER BY k) l",
      [JSON.stringify(keys)],
    );
  }

  /** The current value of one aspect for each of `urns` that has it. */
  async latestOfEach(db: Queryable, aspectName: string, urns: readonly string[]): Promise<Map<string, unknown>> {
    if (urns.length === 0) return new Map();
    const { rows } = await db.query<{ urn: string; value: unknown }>(
      `SELECT DISTINCT ON (urn) urn, value FROM aspect
        WHERE urn = ANY($1::text[]) AND aspect_name = $2 ORDER BY urn, version DESC`,
      [urns, aspectName],
    );
    return new Map(rows.map((r) => [r.urn, r.value]));
  }

  /** The current value of each (urn, aspect) asked for that exists, by urn then aspect name. */
  async latestOfPairs(
    db: Queryable,
    wanted: ReadonlyArray<{ urn: string; aspectName: string }>,
  ): Promise<Map<string, Record<string, unknown>>> {
    const keys = [...new Map(wanted.map((w) => [`${w.urn}\u0000${w.aspectName}`, w])).values()];
    const { rows } = await db.query<{ urn: string; aspect_name: string; value: unknown }>(
      `SELECT DISTINCT ON (a.urn, a.aspect_name) a.urn, a.aspect_name, a.value
         FROM unnest($1::text[], $2::text[]) AS k(urn, aspect_name)
         JOIN aspect a ON a.urn = k.urn AND a.aspect_name = k.aspect_name
        ORDER BY a.urn, a.aspect_name, a.version DESC`,
      [keys.map((k) => k.urn), keys.map((k) => k.aspectName)],
    );
    const byUrn = new Map<string, Record<string, unknown>>();
    for (const row of rows) {
      const aspects = byUrn.get(row.urn) ?? {};
      aspects[row.aspect_name] = row.value;
      byUrn.set(row.urn, aspects);
    }
    return byUrn;
  }

  /** The current value of every aspect of an entity, and who wrote each; null when nothing is stored for it. */
  async latest(
    db: Queryable,
    urn: string,
  ): Promise<{ entityType: string; aspects: Record<string, unknown>; stamps: Record<string, AspectStamp> } | null> {
    const { rows } = await db.query<{
      aspect_name: string;
      entity_type: string;
      value: unknown;
      version: number;
      created_at: string;
      created_by: string;
      created_via: string | null;
      system_metadata: unknown;
    }>(
      `SELECT DISTINCT ON (aspect_name) aspect_name, entity_type, value, version,
              (extract(epoch FROM created_at) * 1000)::int8::text AS created_at, created_by, created_via,
              system_metadata
         FROM aspect WHERE urn = $1 ORDER BY aspect_name, version DESC`,
      [urn],
    );
    if (rows.length === 0) return null;
    return {
      entityType: rows[0]!.entity_type,
      aspects: Object.fromEntries(rows.map((r) => [r.aspect_name, r.value])),
      stamps: Object.fromEntries(
        rows.map((r) => [
          r.aspect_name,
          {
            version: r.version,
            createdAt: Number(r.created_at),
            createdBy: r.created_by,
            createdVia: r.created_via,
            systemMetadata: r.system_metadata,
          },
        ]),
      ),
    };
  }
}

/** Whether anything is stored for the entity (an entity exists when it has at least one aspect). */
export async function entityExists(prisma: Pick<PrismaClient, "aspect">, urn: string): Promise<boolean> {
  return (await prisma.aspect.findFirst({ where: { urn }, select: { urn: true } })) !== null;
}

/**
 * The entity's type (null: nothing is stored for it) and the current value of one of its aspects (null: none), in
 * one statement.
 */
export async function entityWithLatestAspect(
  prisma: Pick<PrismaClient, "$queryRaw">,
  urn: string,
  aspectName: string,
): Promise<{ entityType: string | null; value: unknown }> {
  const [row] = await prisma.$queryRaw<Array<{ entity_type: string | null; value: unknown }>>`
      SELECT (SELECT entity_type FROM aspect WHERE urn = ${urn} LIMIT 1) AS entity_type,
             (SELECT value FROM aspect WHERE urn = ${urn} AND aspect_name = ${aspectName}
               ORDER BY version DESC LIMIT 1) AS value`;
  return { entityType: row?.entity_type ?? null, value: row?.value ?? null };
}

/** How many entities of these types exist (an entity exists when it has at least one aspect). */
export async function countEntitiesOfTypes(db: Queryable, entityTypes: readonly string[]): Promise<number> {
  const { rows } = await db.query<{ n: string }>(
    // Grouped rather than count(DISTINCT urn): PostgreSQL sorts every row for a DISTINCT aggregate, where a GROUP BY
    // may hash them (about half the time over a catalog's versions; a runTest counts once, at its start).
    "SELECT count(*) AS n FROM (SELECT urn FROM aspect WHERE entity_type = ANY($1::text[]) GROUP BY urn) e",
    [entityTypes],
  );
  return Number(rows[0]?.n ?? 0);
}

/**
 * The next `limit` entities of these types after `afterUrn`, in urn order. Keyset pagination walks the primary key
 * (urn first), and an entity type's urns share a prefix, so each batch reads only its own rows however far the walk
 * has got.
 */
export async function entityUrnsAfter(
  db: Queryable,
  entityTypes: readonly string[],
  afterUrn: string,
  limit: number,
): Promise<string[]> {
  const { rows } = await db.query<{ urn: string }>(
    `SELECT urn FROM aspect WHERE urn > $2 AND entity_type = ANY($1::text[]) GROUP BY urn ORDER BY urn LIMIT $3`,
    [entityTypes, afterUrn, limit],
  );
  return rows.map((r) => r.urn);
}

/** An aspect's current value, with its entity. */
export interface LatestAspectRow {
  urn: string;
  entityType: string;
  aspect: string;
  value: unknown;
}

/**
 * The current value of every aspect of these entities, by urn then aspect name: built as one JSON document by
 * PostgreSQL and parsed once, cheaper for the evaluation worker than decoding as many typed rows.
 */
export async function latestAspectsOfEntities(db: Queryable, urns: readonly string[]): Promise<LatestAspectRow[]> {
  const { rows } = await db.query<{ doc: string | null }>(
    `WITH latest AS (
         SELECT l.* FROM unnest($1::text[]) AS b(urn)
          CROSS JOIN LATERAL (
            SELECT DISTINCT ON (a.aspect_name) a.urn, a.entity_type, a.aspect_name, a.value
              FROM aspect a WHERE a.urn = b.urn ORDER BY a.aspect_name, a.version DESC) l)
       SELECT json_agg(json_build_object('urn', urn, 'entityType', entity_type, 'aspect', aspect_name, 'value', value)
                       ORDER BY urn, aspect_name)::text AS doc
         FROM latest`,
    [urns],
  );
  return JSON.parse(rows[0]?.doc ?? "[]") as LatestAspectRow[];
}

/** The writes in runs of at most `max` characters of value text (a write longer than that alone in its own). */
function* byValueText(writes: readonly VersionedAspectWrite[], max: number): Generator<VersionedAspectWrite[]> {
  let chunk: VersionedAspectWrite[] = [];
  let length = 0;
  for (const w of writes) {
    if (chunk.length > 0 && length + w.valueJson.length > max) {
      yield chunk;
      chunk = [];
      length = 0;
    }
    chunk.push(w);
    length += w.valueJson.length;
  }
  if (chunk.length > 0) yield chunk;
}
