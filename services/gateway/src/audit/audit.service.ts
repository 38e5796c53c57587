import { insertAuditEvent, type Prisma, type PrismaClient, replicaReads, type StaleReads } from "@mdp/db";
import { z } from "zod";
import { MAX_EPOCH_MS, parseUrnField } from "@mdp/core";
import type { Actor } from "../auth/actor";
import { pageInput } from "../shared/paging";
import { rule, said } from "../shared/validate";

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

/** A urn to filter by; "" filters by nothing. A mistyped one would otherwise match nothing ("no such events"). */
const urnFilter = (entityType?: string) =>
  z
    .string()
    .refine(
      ...rule((at, urn: string) => {
        if (urn) parseUrnField(at, urn, entityType);
      }),
    )
    .nullish();
/** Past MAX_EPOCH_MS (yet a safe integer), new Date() would be an Invalid Date, failing as a 500. */
const epochMillis = z
  .number()
  .min(
    0,
    said((at) => `${at} must be epoch milliseconds from 0 to ${MAX_EPOCH_MS}`),
  )
  .max(
    MAX_EPOCH_MS,
    said((at) => `${at} must be epoch milliseconds from 0 to ${MAX_EPOCH_MS}`),
  )
  .nullish();

export const listAuditEventsArgs = pageInput({
  actorUrn: urnFilter("corpuser"),
  action: z.string().nullish(),
  targetUrn: urnFilter(),
  /** epoch ms, inclusive */
  since: epochMillis,
  /** epoch ms, exclusive */
  until: epochMillis,
});

/** Reading the audit trail, newest first (MANAGE_POLICIES, declared in policies.graphql.ts). */
export class AuditService {
  constructor(
    private readonly prisma: PrismaClient,
    /** where the listing reads (Database.stale) */
    private readonly reads: StaleReads,
  ) {}

  list({ input }: z.output<typeof listAuditEventsArgs>) {
    return listAuditEvents(this.reads, input);
  }
}

async function listAuditEvents(reads: StaleReads, input: z.output<typeof listAuditEventsArgs>["input"]) {
  const { start, count } = input;
  const { total, rows } = await replicaReads.auditEventPage(
    reads,
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
