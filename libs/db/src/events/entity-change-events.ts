import { ENTITY_CHANGE_CATEGORIES, ENTITY_CHANGE_EVENT, type EntityChangeCategory } from "@mdp/core";
import type { Prisma } from "../generated/prisma/client";
import type { Queryable } from "../timeseries/timeseries.store";

/**
 * The writers of `EntityChangeEvent_v1` events (docs/events.md): each in the transaction of the change it tells of,
 * so an event exists exactly when its change committed. DataHub's EntityChangeEvent record, `{entityType, entityUrn,
 * category, operation, modifier?, parameters?, auditStamp: {time, actor}, version: 0}`, with the row's `category` and
 * `subject_actor` (who may read it without the category's privilege: @mdp/core canReadPlatformEvent) filled in.
 *
 * Bounds (docs/limits.md "Platform events"): a parameter string is cut at PLATFORM_EVENT_PAYLOAD.stringChars, a list
 * at listItems entries, and one event's payload is at most maxBytes of JSON (its parameters are dropped, with
 * `parametersCut: true`, in the rare case urns alone leave no room). Never a raw token or its hash: no writer is given
 * one.
 */
export const PLATFORM_EVENT_PAYLOAD = {
  /** one event's payload, JSON, in bytes */
  maxBytes: 4096,
  /** a string parameter's characters (urns are bounded by the URN limit, 512 bytes URL-encoded) */
  stringChars: 256,
  /** a list parameter's entries */
  listItems: 32,
  /** parameters of one event */
  parameters: 16,
} as const;

/** DataHub's entity types and urns of what the service's own events are about (the id is the API's id). */
export const accessTokenEventUrn = (id: string): string => `urn:li:dataHubAccessToken:${id}`;
export const taskEventUrn = (id: string): string => `urn:li:dataHubTask:${id}`;
export const ACCESS_TOKEN_ENTITY = "dataHubAccessToken";
export const TASK_ENTITY = "dataHubTask";
export const RETENTION_POLICY_ENTITY = "dataHubRetentionPolicy";

/** A parameter's value: a scalar, or a list of scalars. */
export type EventParameter = string | number | boolean | null | ReadonlyArray<string | number | boolean | null>;

/** One change to tell of. */
export interface EntityChange<C extends EntityChangeCategory = EntityChangeCategory> {
  category: C;
  operation: (typeof ENTITY_CHANGE_CATEGORIES)[C][number];
  entityType: string;
  entityUrn: string;
  modifier?: string | null;
  parameters?: Record<string, EventParameter | undefined>;
  /** auditStamp.actor: who made the change (the system actor for chores) */
  actorUrn: string;
  /** the user the event is about (the row's subject_actor), or null */
  subjectActor: string | null;
  /** auditStamp.time, epoch ms; default now */
  time?: number;
}

/** The EntityChangeEvent record of a change, within PLATFORM_EVENT_PAYLOAD. */
export function entityChangePayload(change: EntityChange): Record<string, unknown> {
  const payload: Record<string, unknown> = {
    entityType: change.entityType,
    entityUrn: change.entityUrn,
    category: change.category,
    operation: change.operation,
    ...(change.modifier != null && { modifier: change.modifier }),
    ...(change.parameters !== undefined && { parameters: boundParameters(change.parameters) }),
    auditStamp: { time: change.time ?? Date.now(), actor: change.actorUrn },
    version: 0,
  };
  if (Buffer.byteLength(JSON.stringify(payload)) <= PLATFORM_EVENT_PAYLOAD.maxBytes) return payload;
  delete payload.parameters;
  payload.parametersCut = true;
  return payload;
}

function boundParameters(parameters: Record<string, EventParameter | undefined>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  let n = 0;
  for (const [key, value] of Object.entries(parameters)) {
    if (value === undefined) continue;
    if (++n > PLATFORM_EVENT_PAYLOAD.parameters) break;
    out[cut(key)] = Array.isArray(value)
      ? value.slice(0, PLATFORM_EVENT_PAYLOAD.listItems).map(boundScalar)
      : boundScalar(value as string | number | boolean | null);
  }
  return out;
}

function boundScalar(value: string | number | boolean | null): string | number | boolean | null {
  return typeof value === "string" ? cut(value) : value;
}

// eslint-disable-next-line no-control-regex -- U+0000 is exactly what jsonb refuses
const UNSTORABLE = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/** A string cut to stringChars (a surrogate pair never split), with what jsonb refuses replaced. */
function cut(text: string): string {
  const clean = text.replace(UNSTORABLE, "\uFFFD");
  if (clean.length <= PLATFORM_EVENT_PAYLOAD.stringChars) return clean;
  return `${clean.slice(0, PLATFORM_EVENT_PAYLOAD.stringChars - 1).replace(UNSTORABLE, "")}…`;
}

type EventWriter = Pick<Prisma.TransactionClient, "$executeRaw"> | Queryable;

/** Writes the events, in the caller's transaction (a Prisma transaction or a pg client), in one statement. */
export async function insertEntityChangeEvents(db: EventWriter, changes: readonly EntityChange[]): Promise<void> {
  if (changes.length === 0) return;
  const payloads = changes.map((c) => JSON.stringify(entityChangePayload(c)));
  const urns = changes.map((c) => c.entityUrn);
  const types = changes.map((c) => c.entityType);
  const categories = changes.map((c) => c.category);
  const subjects = changes.map((c) => c.subjectActor);
  if ("$executeRaw" in db) {
    await db.$executeRaw`
      INSERT INTO platform_event (event_type, entity_urn, entity_type, category, subject_actor, payload)
      SELECT ${ENTITY_CHANGE_EVENT}, u, t, c, s, p::jsonb
        FROM unnest(${urns}::text[], ${types}::text[], ${categories}::text[], ${subjects}::text[], ${payloads}::text[])
             AS e(u, t, c, s, p)`;
    return;
  }
  await db.query(
    `INSERT INTO platform_event (event_type, entity_urn, entity_type, category, subject_actor, payload)
     SELECT $1, u, t, c, s, p::jsonb
       FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[]) AS e(u, t, c, s, p)`,
    [ENTITY_CHANGE_EVENT, urns, types, categories, subjects, payloads],
  );
}

// ---- access tokens ----------------------------------------------------------------------------------------------

/** Why a token was revoked (REVOKE's `reason` parameter). */
export type TokenRevokeReason =
  | "revoked"
  | "actorAccessRevoked"
  | "minterAccessRevoked"
  | "serviceAccountDeleted"
  | "durationPolicy"
  | "reuseDetected"
  | "idle";

/** ACCESS_TOKEN REVOKE events of these tokens, by `revokedBy`. */
export function tokenRevokeEvents(
  tokens: ReadonlyArray<{ id: string; actorUrn: string }>,
  revokedBy: string,
  reason: TokenRevokeReason,
): Array<EntityChange<"ACCESS_TOKEN">> {
  return tokens.map((t) => ({
    category: "ACCESS_TOKEN",
    operation: "REVOKE",
    entityType: ACCESS_TOKEN_ENTITY,
    entityUrn: accessTokenEventUrn(t.id),
    parameters: { reason, actorUrn: t.actorUrn },
    actorUrn: revokedBy,
    subjectActor: t.actorUrn,
  }));
}

/** What a CREATE event says of a new token (never its value or hash). */
export interface MintedToken {
  id: string;
  type: "PERSONAL" | "SERVICE_ACCOUNT" | "SESSION";
  name: string;
  actorUrn: string;
  ownerUrn: string;
  /** epoch seconds, or null: never expires */
  expiresAtSeconds: number | null;
  scopes: readonly string[];
  rotatedFromId?: string;
}

/** ACCESS_TOKEN CREATE of a minted token, by `mintedBy`. */
export function tokenCreateEvent(token: MintedToken, mintedBy: string): EntityChange<"ACCESS_TOKEN"> {
  return {
    category: "ACCESS_TOKEN",
    operation: "CREATE",
    entityType: ACCESS_TOKEN_ENTITY,
    entityUrn: accessTokenEventUrn(token.id),
    parameters: {
      tokenType: token.type,
      name: token.name,
      actorUrn: token.actorUrn,
      ownerUrn: token.ownerUrn,
      expiresAt: token.expiresAtSeconds === null ? null : token.expiresAtSeconds * 1000,
      scopes: token.scopes.length > 0 ? token.scopes : undefined,
      rotatedFrom: token.rotatedFromId && accessTokenEventUrn(token.rotatedFromId),
    },
    actorUrn: mintedBy,
    subjectActor: token.actorUrn,
  };
}

/** ACCESS_TOKEN ROTATE of the predecessor (modifier: its successor's urn). */
export function tokenRotateEvent(
  rotation: { predecessorId: string; successorId: string; actorUrn: string; graceEndsAt: number },
  rotatedBy: string,
): EntityChange<"ACCESS_TOKEN"> {
  return {
    category: "ACCESS_TOKEN",
    operation: "ROTATE",
    entityType: ACCESS_TOKEN_ENTITY,
    entityUrn: accessTokenEventUrn(rotation.predecessorId),
    modifier: accessTokenEventUrn(rotation.successorId),
    parameters: { graceEndsAt: rotation.graceEndsAt, actorUrn: rotation.actorUrn },
    actorUrn: rotatedBy,
    subjectActor: rotation.actorUrn,
  };
}

/** The thresholds of EXPIRING_SOON, in days before a token's expiry, largest first. */
export const TOKEN_EXPIRY_NOTICE_DAYS = [7, 1] as const;

/**
 * Writes ACCESS_TOKEN EXPIRING_SOON events for up to `limit` live tokens now within a threshold of their expiry, each
 * with its durable marker (access_token_expiry_notice) in the same statement, so a token gets at most one event per
 * threshold however many chores run at once (the marker's key: a second insert of it does nothing, after waiting for
 * the first to commit) or restart. A token is told at a threshold only when it expires within it but not within the
 * next smaller one (a chore that was down does not send a stale 7-day notice beside the 1-day one), and only when its
 * lifetime is longer than the threshold (its minter knew it would be short). Rotated-out tokens are not told (their
 * expiry ends a grace window), nor are sessions (signing in again is their renewal). Answers how many events it wrote; the caller repeats while it is `limit`.
 */
export async function writeTokenExpiryNotices(db: Queryable, actorUrn: string, limit: number): Promise<number> {
  const thresholds = [...TOKEN_EXPIRY_NOTICE_DAYS];
  const nextSmaller = [...thresholds.slice(1), 0];
  const { rows } = await db.query<{ n: number }>(
    `WITH th AS (
       SELECT * FROM unnest($1::int[], $2::int[]) AS th(days, below)
     ), due AS (
       SELECT t.id, t.actor_urn, t.expires_at, th.days
         FROM th
         JOIN access_token t
           ON t.expires_at > now() + make_interval(days => th.below)
          AND t.expires_at <= now() + make_interval(days => th.days)
          AND t.expires_at - t.created_at > make_interval(days => th.days)
        WHERE t.revoked_at IS NULL AND t.rotated_at IS NULL AND t.type <> 'SESSION'
          AND NOT EXISTS (SELECT 1 FROM access_token_expiry_notice n WHERE n.token_id = t.id AND n.days = th.days)
        ORDER BY t.expires_at
        LIMIT $3
     ), marked AS (
       INSERT INTO access_token_expiry_notice (token_id, days)
       SELECT id, days FROM due
       ON CONFLICT DO NOTHING
       RETURNING token_id, days
     ), written AS (
       INSERT INTO platform_event (event_type, entity_urn, entity_type, category, subject_actor, payload)
       SELECT $4, 'urn:li:dataHubAccessToken:' || d.id, $5::text, 'ACCESS_TOKEN', d.actor_urn,
              jsonb_build_object('entityType', $5::text, 'entityUrn', 'urn:li:dataHubAccessToken:' || d.id,
                                 'category', 'ACCESS_TOKEN', 'operation', 'EXPIRING_SOON',
                                 'parameters', jsonb_build_object(
                                   'expiresAt', round(extract(epoch FROM d.expires_at) * 1000)::int8,
                                   'daysLeft', d.days, 'actorUrn', d.actor_urn),
                                 'auditStamp', jsonb_build_object('time', round(extract(epoch FROM now()) * 1000)::int8,
                                                                  'actor', $6::text),
                                 'version', 0)
         FROM marked m JOIN due d ON d.id = m.token_id AND d.days = m.days
       RETURNING 1
     )
     SELECT count(*)::int AS n FROM written`,
    [thresholds, nextSmaller, limit, ENTITY_CHANGE_EVENT, ACCESS_TOKEN_ENTITY, actorUrn],
  );
  return rows[0]?.n ?? 0;
}

// ---- tasks ------------------------------------------------------------------------------------------------------

/**
 * The statement that writes a TASK event (COMPLETE / FAIL / CANCEL) for each truncation or retention task of
 * `source` (a relation of ended task rows: id, type, state, request, progress, result, failed_reason, created_by)
 * that ended: used by the task repository's final transitions in the same statement as the transition. Parameters:
 * taskType (`truncation` or `retention`), the aspect, rowsDeleted, bytesFreed (a completed truncation), errorCode on
 * FAIL (a code, never the stored reason's text), the retention policy's urn.
 */
export function taskEndedEventInsert(source: string): string {
  const rowsDeleted = `COALESCE((s.result ->> 'deleted')::int8, (s.progress ->> 'deleted')::int8, 0)`;
  const errorCode = `CASE WHEN s.failed_reason LIKE 'Timed out%' THEN 'TIMEOUT'
                          WHEN s.failed_reason LIKE 'Could not be queued%' THEN 'UNAVAILABLE'
                          WHEN s.failed_reason LIKE 'Given up%' THEN 'STALLED'
                          ELSE 'TASK_FAILED' END`;
  return `INSERT INTO platform_event (event_type, entity_urn, entity_type, category, subject_actor, payload)
          SELECT '${ENTITY_CHANGE_EVENT}', 'urn:li:dataHubTask:' || s.id, '${TASK_ENTITY}', 'TASK', s.created_by,
                 jsonb_build_object('entityType', '${TASK_ENTITY}', 'entityUrn', 'urn:li:dataHubTask:' || s.id,
                   'category', 'TASK',
                   'operation', CASE s.state::text WHEN 'completed' THEN 'COMPLETE' WHEN 'failed' THEN 'FAIL'
                                                   ELSE 'CANCEL' END,
                   'parameters', jsonb_strip_nulls(jsonb_build_object(
                     'taskType', CASE WHEN s.request ? 'retentionPolicy' THEN 'retention' ELSE 'truncation' END,
                     'entityType', left(s.request ->> 'entityType', 256),
                     'aspect', left(s.request ->> 'aspect', 256),
                     'retentionPolicy', left(s.request ->> 'retentionPolicy', 600),
                     'rowsDeleted', ${rowsDeleted},
                     'bytesFreed', (s.result ->> 'bytesFreed')::int8,
                     'errorCode', CASE WHEN s.state::text = 'failed' THEN ${errorCode} END)),
                   'auditStamp', jsonb_build_object('time', round(extract(epoch FROM now()) * 1000)::int8,
                                                    'actor', s.created_by),
                   'version', 0)
            FROM ${source} s
           WHERE s.type::text = 'TRUNCATE_TIMESERIES' AND s.state::text IN ('completed', 'failed', 'cancelled')`;
}

// ---- test results -----------------------------------------------------------------------------------------------

/**
 * The statement that writes a TEST_RESULT event (PASS / FAIL; modifier: the test's urn) for each row of `source`
 * (inserted test_result_transition rows: urn, test_urn, passing, previous) that flips a result: a first result
 * (previous null) is no flip. Entity type: the urn's. No subject (readable through VIEW_TESTS and GET_ENTITY).
 */
export function testResultFlipEventInsert(source: string, actorUrn: string): string {
  return `INSERT INTO platform_event (event_type, entity_urn, entity_type, category, subject_actor, payload)
          SELECT '${ENTITY_CHANGE_EVENT}', s.urn, split_part(s.urn, ':', 3), 'TEST_RESULT', NULL,
                 jsonb_build_object('entityType', split_part(s.urn, ':', 3), 'entityUrn', s.urn,
                   'category', 'TEST_RESULT', 'operation', CASE WHEN s.passing THEN 'PASS' ELSE 'FAIL' END,
                   'modifier', s.test_urn,
                   'parameters', jsonb_build_object('previous', CASE WHEN s.previous THEN 'PASS' ELSE 'FAIL' END),
                   'auditStamp', jsonb_build_object('time', round(extract(epoch FROM s.at) * 1000)::int8,
                                                    'actor', '${actorUrn.replaceAll("'", "''")}'),
                   'version', 0)
            FROM ${source} s
           WHERE s.previous IS NOT NULL AND s.previous IS DISTINCT FROM s.passing`;
}

// ---- schedules --------------------------------------------------------------------------------------------------

/** SCHEDULE SUSPEND of a test's scheduled work or a retention policy, about its owner. */
export function scheduleSuspendEvent(suspension: {
  kind: "SCHEDULED_TEST" | "RETENTION_POLICY";
  urn: string;
  ownerUrn: string;
  reason: string;
  missingPrivileges?: readonly string[];
  suspendedBy: string;
}): EntityChange<"SCHEDULE"> {
  return {
    category: "SCHEDULE",
    operation: "SUSPEND",
    entityType: suspension.kind === "SCHEDULED_TEST" ? "test" : RETENTION_POLICY_ENTITY,
    entityUrn: suspension.urn,
    parameters: {
      reason: suspension.reason,
      missingPrivileges: suspension.missingPrivileges,
      ownerUrn: suspension.ownerUrn,
    },
    actorUrn: suspension.suspendedBy,
    subjectActor: suspension.ownerUrn,
  };
}
