/**
 * The SQL of the gateway's create and list statements (libs/db/src/tokens/access-token.repository.ts and
 * access-token-list.repository.ts), copied for the floors: a floor measures what this SQL costs behind a bare server,
 * so it runs the same text with the same parameters and prepared the same way, without reaching into the gateway's
 * code. Keep it in step with those two files when they change.
 */
import type pg from "pg";

/** The token, its audit row and its platform event in one statement, prepared once per connection. */
export function createToken(
  pool: pg.Pool,
  token: {
    id: string;
    urn: string;
    name: string;
    actorUrn: string;
    tokenHash: string;
    /** epoch ms */
    createdAt: number;
    /** epoch seconds */
    exp: number;
  },
): Promise<unknown> {
  return pool.query({
    name: "access-token-create",
    text: `
      WITH token AS (
        INSERT INTO access_token (id, type, name, description, actor_urn, owner_urn, token_hash, created_at, expires_at)
        VALUES ($1::uuid, $2::"AccessTokenType", $3, $4, $5, $6, $7, to_timestamp($8::int8 / 1000.0), to_timestamp($9::int8))
        RETURNING id
      ), event AS (
        INSERT INTO platform_event (event_type, entity_urn, entity_type, category, subject_actor, payload)
        SELECT 'EntityChangeEvent_v1', $13, 'dataHubAccessToken', 'ACCESS_TOKEN', $5, $14::jsonb
          FROM token
      )
      INSERT INTO audit_event (actor_urn, action, target_urn, details)
      SELECT $10, 'accessToken.create', $11, $12::jsonb
        FROM token`,
    values: [
      ...[token.id, "PERSONAL", token.name, null, token.actorUrn, token.actorUrn, token.tokenHash, token.createdAt],
      ...[token.exp, token.actorUrn, token.urn, "{}", `urn:li:dataHubAccessToken:${token.id}`],
      // its ACCESS_TOKEN CREATE event (libs/db/src/events/entity-change-events.ts), about as large as the gateway's
      JSON.stringify({
        entityType: "dataHubAccessToken",
        entityUrn: `urn:li:dataHubAccessToken:${token.id}`,
        category: "ACCESS_TOKEN",
        operation: "CREATE",
        parameters: { tokenType: "PERSONAL", name: token.name, actorUrn: token.actorUrn, ownerUrn: token.actorUrn },
        auditStamp: { time: token.createdAt, actor: token.actorUrn },
        version: 0,
      }),
    ],
  });
}

const epochMs = (column: string) => `round(date_part('epoch', ${column}) * 1000)`;
const LIVE_OF_ACTOR = (actor: string) => `revoked_at IS NULL AND actor_urn = ${actor}`;

/** A page of one actor's live tokens, newest first, with their total: the list statement for one actorUrn filter. */
export async function listTokens(
  pool: pg.Pool,
  actorUrn: string,
  now: Date,
  start: number,
  count: number,
): Promise<Array<{ total: number; id: string | null; actor_urn: string }>> {
  const result = await pool.query<{ total: number; id: string | null; actor_urn: string }>({
    name: "access-token-list-floor",
    text: `
      SELECT c.total, p.id, p.name, p.description, p.actor_urn, p.owner_urn,
             ${epochMs("p.created_at")} AS created_at, ${epochMs("p.expires_at")} AS expires_at,
             ${epochMs("p.last_used_at")} AS last_used_at
        FROM (SELECT ((SELECT count(*) FROM access_token WHERE ${LIVE_OF_ACTOR("$1")} AND expires_at IS NULL)
                      + (SELECT count(*) FROM access_token WHERE ${LIVE_OF_ACTOR("$2")} AND expires_at > $3::timestamptz))::int
                     AS total) AS c
        LEFT JOIN LATERAL (SELECT * FROM access_token
                            WHERE ${LIVE_OF_ACTOR("$4")} AND (expires_at IS NULL OR expires_at > $5::timestamptz)
                            ORDER BY created_at DESC, id DESC
                            LIMIT $6 OFFSET $7) AS p ON true
       ORDER BY p.created_at DESC, p.id DESC`,
    values: [actorUrn, actorUrn, now, actorUrn, now, count, start],
  });
  return result.rows;
}
