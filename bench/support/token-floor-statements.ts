/**
 * The SQL of the gateway's create and list statements (libs/db/src/tokens/access-token.repository.ts and
 * access-token-list.repository.ts), copied for the floors of bench/tokens and bench/cost: a floor measures what this
 * SQL costs behind a bare server or a bare pg client, so it runs the same text with parameters of the same shape and
 * prepared the same way, without reaching into the gateway's code. Keep it in step with those two files when they
 * change.
 */
import type pg from "pg";

/** The token, its platform event and its audit row in one statement, prepared once per connection. */
export function createToken(
  pool: pg.Pool,
  token: {
    id: string;
    name: string;
    actorUrn: string;
    tokenHash: string;
    /** epoch ms */
    createdAt: number;
    /** epoch seconds */
    exp: number;
    /** the token the caller authenticated with, as the gateway records it for a bearer caller */
    parentTokenId: string;
  },
): Promise<unknown> {
  const urn = `urn:li:dataHubAccessToken:${token.id}`;
  return pool.query({
    name: "access-token-create",
    text: `
      WITH token AS (
        INSERT INTO access_token (id, type, name, description, actor_urn, owner_urn, token_hash, created_at, expires_at,
                                  scopes, parent_token_id)
        VALUES ($1::uuid, $2::"AccessTokenType", $3, $4,
                $5, $6, $7,
                to_timestamp($8::int8 / 1000.0), to_timestamp($9::int8),
                $10::text[], $11::uuid)
        RETURNING id
      ), event AS (
        INSERT INTO platform_event (event_type, entity_urn, entity_type, category, subject_actor, payload)
        SELECT $12, $13, $14, $15, $16,
               $17::jsonb
          FROM token
      )
      INSERT INTO audit_event (actor_urn, action, target_urn, details)
      SELECT $18, 'accessToken.create', $19, $20::jsonb
        FROM token`,
    values: [
      ...[token.id, "PERSONAL", token.name, null, token.actorUrn, token.actorUrn, token.tokenHash, token.createdAt],
      ...[token.exp, [], token.parentTokenId],
      ...["EntityChangeEvent_v1", urn, "dataHubAccessToken", "ACCESS_TOKEN", token.actorUrn],
      // its ACCESS_TOKEN CREATE event (libs/db/src/events/entity-change-events.ts tokenCreateEvent)
      JSON.stringify({
        entityType: "dataHubAccessToken",
        entityUrn: urn,
        category: "ACCESS_TOKEN",
        operation: "CREATE",
        parameters: {
          ...{ tokenType: "PERSONAL", name: token.name, actorUrn: token.actorUrn, ownerUrn: token.actorUrn },
          expiresAt: token.exp * 1000,
        },
        auditStamp: { time: token.createdAt, actor: token.actorUrn },
        version: 0,
      }),
      token.actorUrn,
      urn,
      // the details the gateway's token.service.ts records for a bearer caller
      JSON.stringify({
        ...{ name: token.name, actorUrn: token.actorUrn, duration: "ONE_HOUR", scopes: null },
        ...{ parentTokenId: token.parentTokenId, via: "token" },
      }),
    ],
  });
}

const epochMs = (column: string) => `round(date_part('epoch', ${column}) * 1000)`;
// one actor as the repository writes it (ANY of one value, so the page is read along the actor's index)
const LIVE_OF_ONE_ACTOR = (actor: string) =>
  `revoked_at IS NULL AND type <> 'SESSION' AND actor_urn = ANY(ARRAY[${actor}]::text[])`;

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
             ${epochMs("p.last_used_at")} AS last_used_at, CASE WHEN cardinality(p.scopes) > 0 THEN p.scopes END AS scopes,
             p.parent_token_id::text AS parent_token_id,
             p.rotated_from_id::text AS rotated_from_id, p.rotated_to_id::text AS rotated_to_id,
             ${epochMs("p.rotated_at")} AS rotated_at
        FROM (SELECT ((SELECT count(*) FROM access_token WHERE ${LIVE_OF_ONE_ACTOR("$1")} AND expires_at IS NULL)
                      + (SELECT count(*) FROM access_token WHERE ${LIVE_OF_ONE_ACTOR("$2")} AND expires_at > $3::timestamptz))::int
                     AS total) AS c
        LEFT JOIN LATERAL (SELECT * FROM access_token
                            WHERE ${LIVE_OF_ONE_ACTOR("$4")} AND (expires_at IS NULL OR expires_at > $5::timestamptz)
                            ORDER BY actor_urn, created_at DESC, id DESC
                            LIMIT $6 OFFSET $7) AS p ON true
       ORDER BY p.created_at DESC, p.id DESC`,
    values: [actorUrn, actorUrn, now, actorUrn, now, count, start],
  });
  return result.rows;
}
