import type { AuditEvent, Prisma, PrismaClient } from "./generated/prisma/client";
import type { Queryable } from "./timeseries/timeseries.store";

export interface AuditEventInput {
  actorUrn: string;
  action: string;
  targetUrn: string | null;
  details: Record<string, unknown>;
}

/**
 * How much caller-controlled text one audit row keeps (docs/limits.md "Audit trail"). A string is cut past
 * `stringChars` (no field the service validates is longer: a urn ≤ 512 bytes URL-encoded, a description ≤ 2,000
 * characters); `details` keeps about `detailsChars` characters in all, arrays and objects past that cut with a marker
 * saying how many entries were left off, and nesting past `depth` levels is replaced by a marker. Every audit row is
 * written through `boundAuditEvent`, so no writer stores a caller's megabyte, however it was let through.
 */
export const AUDIT_LIMITS = { stringChars: 2048, detailsChars: 32_768, depth: 8 } as const;

/** The audit row as stored: caller text cut, and what PostgreSQL cannot hold in text (NUL, lone surrogates) replaced. */
export function boundAuditEvent(event: AuditEventInput): AuditEventInput {
  return {
    actorUrn: cutText(event.actorUrn),
    action: cutText(event.action),
    targetUrn: event.targetUrn === null ? null : cutText(event.targetUrn),
    details: boundAuditDetails(event.details),
  };
}

/** `details` within AUDIT_LIMITS: what boundAuditEvent stores (the token mint's single statement uses it too). */
export function boundAuditDetails(details: Record<string, unknown>): Record<string, unknown> {
  const budget = { left: AUDIT_LIMITS.detailsChars };
  return bound(details, budget, 0) as Record<string, unknown>;
}

function cutText(text: string): string {
  // jsonb and text refuse U+0000, and JSON text with a lone surrogate (a cut pair, or a caller's \ud800) is refused
  // as jsonb: either would fail the row, and with it the change it records.
  const clean = wellFormed(text);
  if (clean.length <= AUDIT_LIMITS.stringChars) return clean;
  return `${wellFormed(clean.slice(0, AUDIT_LIMITS.stringChars))}… (cut from ${clean.length} characters)`;
}

// eslint-disable-next-line no-control-regex -- U+0000 is exactly what must be found
const UNSTORABLE = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

function wellFormed(text: string): string {
  return text.replace(UNSTORABLE, "\uFFFD");
}

function bound(value: unknown, budget: { left: number }, depth: number): unknown {
  if (typeof value === "string") {
    const cut = cutText(value);
    budget.left -= cut.length;
    return cut;
  }
  if (value === null || typeof value !== "object") {
    budget.left -= 8;
    return value;
  }
  if (depth >= AUDIT_LIMITS.depth) return "… (nested too deep)";
  if (Array.isArray(value)) {
    const kept: unknown[] = [];
    for (const item of value) {
      if (budget.left <= 0) {
        kept.push(`… (${value.length - kept.length} more)`);
        break;
      }
      kept.push(bound(item, budget, depth + 1));
    }
    return kept;
  }
  const kept: Record<string, unknown> = {};
  const entries = Object.entries(value as Record<string, unknown>);
  let taken = 0;
  for (const [key, item] of entries) {
    if (budget.left <= 0) {
      kept["…"] = `${entries.length - taken} more fields`;
      break;
    }
    const name = cutText(key);
    budget.left -= name.length;
    kept[name] = bound(item, budget, depth + 1);
    taken++;
  }
  return kept;
}

/**
 * Writes an audit row inside the caller's transaction, so the change and its record commit together. The gateway's
 * recordAudit (services/gateway/src/audit/audit.service.ts) is what its operations call; a worker that makes a change
 * of its own (a retention schedule's truncation task) calls this. Caller text is cut (boundAuditEvent).
 */
export async function insertAuditEvent(tx: Prisma.TransactionClient, event: AuditEventInput): Promise<void> {
  const row = boundAuditEvent(event);
  await tx.auditEvent.create({
    data: { ...row, details: row.details as Prisma.InputJsonObject },
  });
}

/**
 * The same rows, written with plain SQL on a pg transaction's client: for writers whose transaction is not Prisma's
 * (the evaluation worker's push, whose test actions are audited with the results they come from). One statement for
 * any number of rows. Caller text is cut (boundAuditEvent).
 */
export async function insertAuditEvents(client: Queryable, events: readonly AuditEventInput[]): Promise<void> {
  if (events.length === 0) return;
  const rows = events.map(boundAuditEvent);
  await client.query(
    `INSERT INTO audit_event (actor_urn, action, target_urn, details)
     SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::jsonb[])`,
    [
      rows.map((e) => e.actorUrn),
      rows.map((e) => e.action),
      rows.map((e) => e.targetUrn),
      rows.map((e) => JSON.stringify(e.details)),
    ],
  );
}

/**
 * One row per target, all with the same actor, action and details, in one statement in the caller's transaction (a
 * bulk revocation's per-token rows). `details` is cut as boundAuditEvent cuts it.
 */
export async function insertAuditEventPerTarget(
  tx: Prisma.TransactionClient,
  event: { actorUrn: string; action: string; targetUrns: readonly string[]; details: Record<string, unknown> },
): Promise<void> {
  const details = JSON.stringify(boundAuditDetails(event.details));
  await tx.$executeRaw`
      INSERT INTO audit_event (actor_urn, action, target_urn, details)
      SELECT ${event.actorUrn}, ${event.action}, urn, ${details}::jsonb
        FROM unnest(${event.targetUrns}::text[]) AS urn`;
}

/** What the audit trail is read by: each given field must match; `since` inclusive, `until` exclusive. */
export interface AuditEventFilter {
  actorUrn?: string;
  action?: string;
  targetUrn?: string;
  since?: Date;
  until?: Date;
}

/**
 * A page of the audit trail, newest first along the (…, created_at DESC) indexes (id orders the rows of one
 * millisecond), and how many rows match: both in one transaction.
 */
export async function auditEventPage(
  prisma: PrismaClient,
  filter: AuditEventFilter,
  skip: number,
  take: number,
): Promise<{ total: number; rows: AuditEvent[] }> {
  const createdAt = {
    ...(filter.since !== undefined ? { gte: filter.since } : {}),
    ...(filter.until !== undefined ? { lt: filter.until } : {}),
  };
  const where: Prisma.AuditEventWhereInput = {
    ...(filter.actorUrn ? { actorUrn: filter.actorUrn } : {}),
    ...(filter.action ? { action: filter.action } : {}),
    ...(filter.targetUrn ? { targetUrn: filter.targetUrn } : {}),
    ...(Object.keys(createdAt).length > 0 ? { createdAt } : {}),
  };
  const [total, rows] = await prisma.$transaction([
    prisma.auditEvent.count({ where }),
    prisma.auditEvent.findMany({ where, orderBy: [{ createdAt: "desc" }, { id: "desc" }], skip, take }),
  ]);
  return { total, rows };
}
