import type { Prisma } from "./generated/prisma/client";
import type { Queryable } from "./timeseries/timeseries.store";

export interface AuditEventInput {
  actorUrn: string;
  action: string;
  targetUrn: string | null;
  details: Record<string, unknown>;
}

/**
 * Writes an audit row inside the caller's transaction, so the change and its record commit together. The gateway's
 * recordAudit (services/gateway/src/audit/audit.service.ts) is what its operations call; a worker that makes a change
 * of its own (a retention schedule's truncation task) calls this.
 */
export async function insertAuditEvent(tx: Prisma.TransactionClient, event: AuditEventInput): Promise<void> {
  await tx.auditEvent.create({
    data: { ...event, details: event.details as Prisma.InputJsonObject },
  });
}

/**
 * The same rows, written with plain SQL on a pg transaction's client: for writers whose transaction is not Prisma's
 * (the evaluation worker's push, whose test actions are audited with the results they come from). One statement for
 * any number of rows.
 */
export async function insertAuditEvents(client: Queryable, events: readonly AuditEventInput[]): Promise<void> {
  if (events.length === 0) return;
  await client.query(
    `INSERT INTO audit_event (actor_urn, action, target_urn, details)
     SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::jsonb[])`,
    [
      events.map((e) => e.actorUrn),
      events.map((e) => e.action),
      events.map((e) => e.targetUrn),
      events.map((e) => JSON.stringify(e.details)),
    ],
  );
}
