import { pruneInBatches, type Config } from "@mdp/core";
import { pruneAccessTokens, pruneAspectVersions, pruneAuditEvents, type Queryable } from "@mdp/db";
import type { Chore } from "@mdp/queues";

/** How often each table retention chore fires (once per cluster): each firing deletes until caught up or its budget. */
export const TABLE_PRUNE_EVERY_MS = 10 * 60_000;

/** Rows one delete statement takes: short statements, so writers of the same tables never wait long on one. */
const BATCH = 5_000;

export type TableRetentionConfig = Pick<
  Config,
  "ASPECT_MAX_VERSIONS" | "ASPECT_MAX_VERSIONS_BY_ASPECT" | "ACCESS_TOKEN_RETENTION_DAYS" | "AUDIT_RETENTION_DAYS"
>;

/**
 * The chores that bound the tables growing with use (docs/limits.md "Retention"): aspect versions past each aspect's
 * maximum, access token rows that stopped working ACCESS_TOKEN_RETENTION_DAYS ago, audit rows older than
 * AUDIT_RETENTION_DAYS. Each firing deletes in statements of BATCH rows until nothing is left or `budgetMs` is spent
 * (pruneInBatches, as every retention), so a backlog drains over several firings.
 */
export function tableRetentionChores(
  pool: Queryable,
  config: TableRetentionConfig,
  budgetMs = 20_000,
): Array<Chore<"evaluationChores">> {
  const chore = (name: string, prune: (batch: number) => Promise<number>): Chore<"evaluationChores"> => ({
    name,
    everyMs: TABLE_PRUNE_EVERY_MS,
    run: async () => ({ deleted: await pruneInBatches(prune, { budgetMs, batch: BATCH }) }),
  });
  return [
    chore("prune-aspect-versions", (batch) =>
      pruneAspectVersions(pool, config.ASPECT_MAX_VERSIONS, config.ASPECT_MAX_VERSIONS_BY_ASPECT, batch),
    ),
    chore("prune-access-tokens", (batch) => pruneAccessTokens(pool, config.ACCESS_TOKEN_RETENTION_DAYS, batch)),
    chore("prune-audit-events", (batch) => pruneAuditEvents(pool, config.AUDIT_RETENTION_DAYS, batch)),
  ];
}
