/** @mdp/db: the Prisma client factory, the generated models and enums, and the migration applier. */
export { createPrismaClient, type PrismaClientOptions } from "./client";
export { isUniqueViolation } from "./errors";
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
