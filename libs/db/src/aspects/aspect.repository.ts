import type pg from "pg";
import type { Queryable } from "../timeseries/timeseries.store";

export interface VersionedAspectWrite {
  urn: string;
  entityType: string;
  aspectName: string;
  /** JSON text of the aspect value */
  valueJson: string;
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
  async upsert(client: pg.ClientBase, writes: VersionedAspectWrite[], createdBy: string): Promise<void> {
    if (writes.length === 0) return;
    const keyOf = (w: VersionedAspectWrite) => JSON.stringify([w.urn, w.aspectName]);
    const keys = [...new Set(writes.map(keyOf))].sort();
    await client.query("SELECT pg_advisory_xact_lock(hashtext(k)) FROM unnest($1::text[]) AS k ORDER BY k", [keys]);
    // Several versions of one aspect in one batch apply in order: the n-th gets max + n.
    const seen = new Map<string, number>();
    const ordinals = writes.map((w) => {
      const key = keyOf(w);
      const n = (seen.get(key) ?? 0) + 1;
      seen.set(key, n);
      return n;
    });
    await client.query(
      `INSERT INTO aspect (urn, aspect_name, version, entity_type, value, created_by)
       SELECT d.urn, d.aspect_name, COALESCE(m.version, 0) + d.ordinal, d.entity_type, d.value::jsonb, $6::text
         FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::int[])
              AS d(urn, aspect_name, entity_type, value, ordinal)
         LEFT JOIN LATERAL (
           SELECT max(a.version) AS version FROM aspect a WHERE a.urn = d.urn AND a.aspect_name = d.aspect_name
         ) m ON true`,
      [
        writes.map((w) => w.urn),
        writes.map((w) => w.aspectName),
        writes.map((w) => w.entityType),
        writes.map((w) => w.valueJson),
        ordinals,
        createdBy,
      ],
    );
  }

  /** The current value of every aspect of an entity; null when nothing is stored for it. */
  async latest(db: Queryable, urn: string): Promise<{ entityType: string; aspects: Record<string, unknown> } | null> {
    const { rows } = await db.query<{ aspect_name: string; entity_type: string; value: unknown }>(
      `SELECT DISTINCT ON (aspect_name) aspect_name, entity_type, value
         FROM aspect WHERE urn = $1 ORDER BY aspect_name, version DESC`,
      [urn],
    );
    if (rows.length === 0) return null;
    return { entityType: rows[0]!.entity_type, aspects: Object.fromEntries(rows.map((r) => [r.aspect_name, r.value])) };
  }
}
