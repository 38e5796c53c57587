/** @mdp/db: the Prisma client factory, the generated models and enums, and the migration applier. */
export { createDatabase, createPrismaClient, type Database, type PrismaClientOptions } from "./client";
export * from "./aspects/aspect.repository";
export { inTransaction } from "./transaction";
export * from "./timeseries/timeseries-tables";
export * from "./timeseries/timeseries-limits";
export * from "./timeseries/timeseries.store";
export * from "./timeseries/truncation";
export { bulkLoad, type BulkLoadOptions } from "./timeseries/bulk-load";
export { isUniqueViolation, notFoundWhenMissing, unstorableValueReason } from "./errors";
export { likeLiteral } from "./like";
export * from "./audit";
export * from "./audit-budget";
export * from "./retention/retention-runs";
export * from "./policies/grants";
export * from "./policies/scheduled-work";
export * from "./tasks/task.repository";
export * from "./tasks/task-listing";
export * from "./tasks/evaluation-tasks.repository";
export * from "./policies/schedule-rows";
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
