/** @mdp/db: the Prisma client factory, the generated models and enums, the repositories, and the migration applier. */
export { createDatabase, createPrismaClient, pingDatabase, type Database, type PrismaClientOptions } from "./client";
export * from "./aspects/aspect.repository";
export * from "./aspects/entity-batches";
export { inPrismaTransaction, inTransaction, isStatementTimeout, setStatementTimeout } from "./transaction";
export * from "./timeseries/timeseries-tables";
export * from "./timeseries/timeseries-limits";
export * from "./timeseries/timeseries.store";
export * from "./timeseries/truncation";
export * from "./timeseries/truncation-rates";
export { bulkLoad, type BulkLoadOptions } from "./timeseries/bulk-load";
export { isUniqueViolation, notFoundWhenMissing, unstorableValueReason } from "./errors";
export { likeLiteral } from "./like";
export * from "./audit";
export * from "./audit-budget";
export * from "./retention/retention-runs";
export * from "./policies/grants";
export * from "./policies/scheduled-work";
export * from "./events/webhook.types";
export * from "./events/webhook-subscription.repository";
export * from "./events/webhook-delivery.repository";
export * from "./events/webhook-circuit.repository";
export * from "./events/webhook-delivery-log.repository";
export * from "./events/webhook-chores.repository";
// One repository module per table or aggregate: the statements services and processors run (README "Repositories").
export * from "./tokens/access-token.repository";
export * from "./tokens/access-token-list.repository";
export * from "./tokens/access-token-revocation.repository";
export type { DurationPolicy } from "./tokens/access-token-duration-policy";
export * from "./tokens/service-account.repository";
export * from "./tokens/access-token-rotation.repository";
export * from "./tokens/access-token-usage.repository";
export * from "./policies/policy.repository";
export * from "./policies/group.repository";
export * from "./policies/delegated-work.repository";
export * from "./policies/revoked-token-work";
export * from "./metadata-tests/metadata-test.repository";
export * from "./metadata-tests/test-results.repository";
export * from "./metadata-tests/test-run-diff.repository";
export * from "./metadata-tests/evaluation-input.repository";
export * from "./retention/retention-policy.repository";
export * from "./retention/table-retention.repository";
export * from "./tasks/task-row";
export * from "./tasks/task.repository";
export * from "./tasks/task-listing";
export * from "./tasks/test-run-events";
export * from "./tasks/evaluation-tasks.repository";
export * from "./policies/schedule-rows";
export * from "./policies/schedule-slots";
export * from "./events/platform-event.repository";
export * from "./events/platform-event-partition.repository";
export * from "./events/on-change-backlog.repository";
export * from "./events/entity-change-events";
export * from "./events/platform-event-listing";
// PrismaClient, the Prisma namespace (errors, input types, TransactionClient), every model type and enum.
export * from "./generated/prisma/client";
export {
  applyMigrations,
  markRolledBack,
  MigrationError,
  migrationStatus,
  type MigrateOptions,
  type MigrationStatus,
} from "./migrate/applier";
export { ensureDatabase } from "./migrate/database";
// Hot standbys for stale-tolerant reads (docs/postgres.md): the routing, and the statements declared to use it.
export {
  currentReader,
  readerPosition,
  readerWrote,
  ReplicaRouter,
  withReader,
  type ReadCounts,
  type ReadTarget,
  type ReplicaState,
  type StaleReads,
  type WritePositions,
} from "./read-replicas";
export { replicaReads } from "./stale-reads";
export { latestLsn } from "./wal-positions";
export { replicaMetrics, replicaReadiness, type ReplicaPromClient, type ReplicaReadiness } from "./replica-monitoring";
