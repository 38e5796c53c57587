import { auditEventPage, insertAuditEvent, type Prisma, type PrismaClient } from "@mdp/db";
import { badInput, MAX_EPOCH_MS, parseUrnField } from "@mdp/core";
import type { Actor } from "../auth/actor";
import { pageOf } from "../graphql/paging";
import type { PolicyEngine } from "../policies/policy-engine";

type Tx = Prisma.TransactionClient;

/** Writes an audit row inside the caller's transaction, so the change and its record commit together. */
export async function recordAudit(
  tx: Tx,
  actor: Actor,
  action: string,
  targetUrn: string | null,
  details: Record<string, unknown> = {},
): Promise<void> {
  await insertAuditEvent(tx, { actorUrn: actor.urn, action, targetUrn, details: { ...details, via: actor.via } });
}

export interface ListAuditEventsInput {
  start?: number | null;
  count?: number | null;
  actorUrn?: string | null;
  action?: string | null;
  targetUrn?: string | null;
  /** epoch ms, inclusive */
  since?: number | null;
  /** epoch ms, exclusive */
  until?: number | null;
}

/** Reading the audit trail: MANAGE_POLICIES, newest first. */
export class AuditService {
  constructor(
    private readonly prisma: PrismaClient,
    private readonly engine: PolicyEngine,
  ) {}

  async list(actor: Actor, input: ListAuditEventsInput) {
    await this.engine.require(actor, "MANAGE_POLICIES", "read audit events");
    return listAuditEvents(this.prisma, input);
  }
}

async function listAuditEvents(prisma: PrismaClient, input: ListAuditEventsInput) {
  const { start, count } = pageOf(input);
  // A mistyped urn would otherwise match nothing, which reads as "no such events".
  if (input.actorUrn) parseUrnField("input.actorUrn", input.actorUrn, "corpuser");
  if (input.targetUrn) parseUrnField("input.targetUrn", input.targetUrn);
  for (const field of ["since", "until"] as const) {
    const value = input[field];
    // Past MAX_EPOCH_MS (yet a safe integer), new Date() would be an Invalid Date, failing as a 500.
    if (value != null && !(value >= 0 && value <= MAX_EPOCH_MS)) {
      throw badInput(`input.${field} must be epoch milliseconds from 0 to ${MAX_EPOCH_MS}`);
    }
  }
  const { total, rows } = await auditEventPage(
    prisma,
    {
      ...(input.actorUrn ? { actorUrn: input.actorUrn } : {}),
      ...(input.action ? { action: input.action } : {}),
      ...(input.targetUrn ? { targetUrn: input.targetUrn } : {}),
      ...(input.since != null ? { since: new Date(input.since) } : {}),
      ...(input.until != null ? { until: new Date(input.until) } : {}),
    },
    start,
    count,
  );
  return {
    start,
    count: rows.length,
    total,
    events: rows.map((r) => ({
      id: r.id.toString(),
      actorUrn: r.actorUrn,
      action: r.action,
      targetUrn: r.targetUrn,
      details: JSON.stringify(r.details),
      createdAt: r.createdAt.getTime(),
    })),
  };
}
