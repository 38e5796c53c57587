import type { Prisma } from "./generated/prisma/client";

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
