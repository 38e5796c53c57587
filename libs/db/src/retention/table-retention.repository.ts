import type { Queryable } from "../timeseries/timeseries.store";

/**
 * The deletes that bound the tables growing with use (docs/limits.md "Retention"), each at most `limit` rows per
 * statement and SKIP LOCKED, so a chore's firing and a prune by hand share the work. Each answers how many went.
 */

/**
 * Aspect versions past the newest `maxVersions` of their (entity, aspect) — `byAspect[aspect]` where given: DataHub's
 * version-based retention. The latest version is never deleted (at least one is kept), so nothing a read or the next
 * write's version number depends on goes.
 */
export async function pruneAspectVersions(
  db: Queryable,
  maxVersions: number,
  byAspect: Readonly<Record<string, number>>,
  limit: number,
): Promise<number> {
  const { rowCount } = await db.query(
    `DELETE FROM aspect d WHERE (d.urn, d.aspect_name, d.version) IN (
       SELECT a.urn, a.aspect_name, a.version
         FROM (SELECT urn, aspect_name, version,
                      row_number() OVER (PARTITION BY urn, aspect_name ORDER BY version DESC) AS nth
                 FROM aspect) a
        WHERE a.nth > GREATEST(COALESCE(($2::jsonb ->> a.aspect_name)::int, $1), 1)
        LIMIT $3)`,
    [maxVersions, JSON.stringify(byAspect), limit],
  );
  return rowCount ?? 0;
}

/**
 * Access token rows that stopped working (revoked, or expired) more than `days` days ago. Kept however old: a token
 * that deferred work still acts through (a test's schedule, a retention policy, a webhook subscription:
 * `owner_token_id`, docs/authorization.md "Deferred work": revoking or outliving the token does not stop that work,
 * and without its row the work may do nothing), and the parent of a token still kept (its chain bounds the child).
 */
export async function pruneAccessTokens(db: Queryable, days: number, limit: number): Promise<number> {
  const { rowCount } = await db.query(
    `DELETE FROM access_token WHERE id IN (
       SELECT t.id FROM access_token t
        WHERE (t.revoked_at < now() - make_interval(days => $1) OR t.expires_at < now() - make_interval(days => $1))
          AND NOT EXISTS (SELECT 1 FROM access_token c WHERE c.parent_token_id = t.id)
          AND NOT EXISTS (SELECT 1 FROM metadata_test m WHERE m.owner_token_id = t.id::text)
          AND NOT EXISTS (SELECT 1 FROM retention_policy r WHERE r.owner_token_id = t.id::text)
          AND NOT EXISTS (SELECT 1 FROM webhook_subscription w WHERE w.owner_token_id = t.id::text)
        LIMIT $2
        FOR UPDATE SKIP LOCKED)`,
    [days, limit],
  );
  return rowCount ?? 0;
}

/** Audit rows older than `days` days, oldest first. */
export async function pruneAuditEvents(db: Queryable, days: number, limit: number): Promise<number> {
  const { rowCount } = await db.query(
    `DELETE FROM audit_event WHERE id IN (
       SELECT id FROM audit_event WHERE created_at < now() - make_interval(days => $1)
        ORDER BY created_at LIMIT $2
        FOR UPDATE SKIP LOCKED)`,
    [days, limit],
  );
  return rowCount ?? 0;
}
