import { insertEntityChangeEvents, tokenRevokeEvents } from "../events/entity-change-events";
import type { Prisma } from "../generated/prisma/client";
import { insertAuditEventPerTarget } from "../audit";

/**
 * What each access token is used for (docs/limits.md "Access tokens"): the last few client (address, user agent)
 * pairs, and requests per UTC day and operation. Written in batches by the gateway's usage recorder, never per
 * request; bounded per token by the statements here.
 */

/** How many distinct client pairs a token keeps: the most recent. */
export const MAX_CLIENTS_PER_TOKEN = 5;
/** How many days of per-operation counts a token keeps (today included). */
export const USAGE_DAYS = 30;
/** The longest stored client address and user agent; longer ones are cut by the recorder. */
export const MAX_CLIENT_IP_CHARS = 64;
export const MAX_USER_AGENT_CHARS = 256;
export const MAX_OPERATION_CHARS = 128;

/** A batch of uses, as parallel arrays (one statement each, whatever the batch's size). */
export interface UsageBatch {
  clients: { tokenIds: string[]; ips: string[]; userAgents: string[]; times: Date[] };
  /** `days` as YYYY-MM-DD (UTC) */
  operations: { tokenIds: string[]; days: string[]; operations: string[]; counts: number[] };
}

/**
 * Adds a batch in the caller's transaction: client pairs upserted (the newest time kept, as several replicas flush
 * independently) and all but the MAX_CLIENTS_PER_TOKEN most recent of each token in the batch dropped; counts added,
 * and the batch's tokens' counts older than USAGE_DAYS dropped. Uses of a token that no longer exists are skipped.
 */
export async function recordAccessTokenUsage(tx: Prisma.TransactionClient, batch: UsageBatch): Promise<void> {
  const { clients, operations } = batch;
  if (clients.tokenIds.length > 0) {
    await tx.$executeRaw`
        INSERT INTO access_token_client (token_id, ip, user_agent, last_seen_at)
        SELECT u.token_id, u.ip, u.user_agent, u.at
          FROM unnest(${clients.tokenIds}::uuid[], ${clients.ips}::text[], ${clients.userAgents}::text[],
                      ${clients.times}::timestamptz[]) AS u(token_id, ip, user_agent, at)
         WHERE EXISTS (SELECT 1 FROM access_token t WHERE t.id = u.token_id)
        ON CONFLICT (token_id, ip, user_agent)
        DO UPDATE SET last_seen_at = GREATEST(access_token_client.last_seen_at, EXCLUDED.last_seen_at)`;
    await tx.$executeRaw`
        DELETE FROM access_token_client AS c
         USING (SELECT token_id, ip, user_agent,
                       row_number() OVER (PARTITION BY token_id ORDER BY last_seen_at DESC, ip, user_agent) AS n
                  FROM access_token_client WHERE token_id = ANY(${[...new Set(clients.tokenIds)]}::uuid[])) AS r
         WHERE c.token_id = r.token_id AND c.ip = r.ip AND c.user_agent = r.user_agent
           AND r.n > ${MAX_CLIENTS_PER_TOKEN}`;
  }
  if (operations.tokenIds.length > 0) {
    await tx.$executeRaw`
        INSERT INTO access_token_operation_count (token_id, day, operation, count)
        SELECT u.token_id, u.day, u.operation, u.count
          FROM unnest(${operations.tokenIds}::uuid[], ${operations.days}::date[], ${operations.operations}::text[],
                      ${operations.counts}::int4[]) AS u(token_id, day, operation, count)
         WHERE EXISTS (SELECT 1 FROM access_token t WHERE t.id = u.token_id)
        ON CONFLICT (token_id, day, operation)
        DO UPDATE SET count = access_token_operation_count.count + EXCLUDED.count`;
    await tx.$executeRaw`
        DELETE FROM access_token_operation_count
         WHERE token_id = ANY(${[...new Set(operations.tokenIds)]}::uuid[])
           AND day <= (now() AT TIME ZONE 'UTC')::date - ${USAGE_DAYS}::int`;
  }
}

/** What a token is used for, as read back. Times are epoch ms. */
export interface AccessTokenUsageRow {
  clients: Array<{ ip: string; userAgent: string; lastSeenAt: number }>;
  operations: Array<{ operation: string; count: number }>;
}

/**
 * The usage of each of `ids` (at most a page of a list): the client pairs newest first, and the counts of the last
 * USAGE_DAYS days by operation, most first; a token without uses has empty lists. One statement, so that both are
 * read in one snapshot: with two, a gateway's flush committed between them showed a use's count without its client.
 */
export async function accessTokenUsageOf(
  prisma: Pick<Prisma.TransactionClient, "$queryRaw">,
  ids: readonly string[],
): Promise<Map<string, AccessTokenUsageRow>> {
  const usage = new Map<string, AccessTokenUsageRow>(ids.map((id) => [id, { clients: [], operations: [] }]));
  if (ids.length === 0) return usage;
  // A client row: (ip, user_agent, last seen); a count row: (operation, NULL, count). Ordered as each list is.
  const rows = await prisma.$queryRaw<
    Array<{ token_id: string; client: boolean; a: string; b: string | null; n: number }>
  >`
      SELECT token_id::text, true AS client, ip AS a, user_agent AS b,
             round(date_part('epoch', last_seen_at) * 1000)::float8 AS n
        FROM access_token_client WHERE token_id = ANY(${[...ids]}::uuid[])
      UNION ALL
      SELECT token_id::text, false, operation, NULL, sum(count)::int8::float8
        FROM access_token_operation_count
       WHERE token_id = ANY(${[...ids]}::uuid[]) AND day > (now() AT TIME ZONE 'UTC')::date - ${USAGE_DAYS}::int
       GROUP BY token_id, operation
      ORDER BY 1, 2, 5 DESC, 3, 4`;
  for (const row of rows) {
    const lists = usage.get(row.token_id);
    if (!lists) continue;
    if (row.client) lists.clients.push({ ip: row.a, userAgent: row.b ?? "", lastSeenAt: Number(row.n) });
    else lists.operations.push({ operation: row.a, count: Number(row.n) });
  }
  return usage;
}

/**
 * Drops at most `limit` counts older than USAGE_DAYS (tokens no longer used keep none past it), in one statement: the
 * gateways' `prune-token-usage` chore repeats it (@mdp/core's pruneInBatches). Answers how many rows.
 */
export async function pruneAccessTokenUsage(
  prisma: Pick<Prisma.TransactionClient, "$executeRaw">,
  limit: number,
): Promise<number> {
  return prisma.$executeRaw`
      DELETE FROM access_token_operation_count WHERE (token_id, day, operation) IN (
        SELECT token_id, day, operation FROM access_token_operation_count
         WHERE day <= (now() AT TIME ZONE 'UTC')::date - ${USAGE_DAYS}::int
         LIMIT ${limit}::int FOR UPDATE SKIP LOCKED)`;
}

/**
 * Revokes every live token not used for `days` days (nor created within them, for one never used) by `revokedBy`, in
 * the caller's transaction, with an `accessToken.revoke` row per token (reason `idle`). Answers their ids and actors.
 */
export async function revokeIdleAccessTokens(
  tx: Prisma.TransactionClient,
  days: number,
  revokedBy: string,
  urnOf: (id: string) => string,
  details: Record<string, unknown>,
): Promise<Array<{ id: string; actorUrn: string }>> {
  const revoked = await tx.$queryRaw<Array<{ id: string; actorUrn: string }>>`
      UPDATE access_token SET revoked_at = now(), revoked_by = ${revokedBy}
       WHERE revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now())
         AND COALESCE(last_used_at, created_at) < now() - make_interval(days => ${days}::int)
      RETURNING id::text, actor_urn AS "actorUrn"`;
  await insertEntityChangeEvents(tx, tokenRevokeEvents(revoked, revokedBy, "idle"));
  const byActor = new Map<string, string[]>();
  for (const t of revoked) byActor.set(t.actorUrn, [...(byActor.get(t.actorUrn) ?? []), urnOf(t.id)]);
  for (const [actorUrn, targetUrns] of byActor) {
    await insertAuditEventPerTarget(tx, {
      actorUrn: revokedBy,
      action: "accessToken.revoke",
      targetUrns,
      details: { ...details, actorUrn, bulk: true, reason: "idle", idleDays: days },
    });
  }
  return revoked;
}
