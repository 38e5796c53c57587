-- A proposal's systemMetadata (DataHub's SystemMetadata: lastObserved, runId, properties) is kept with the aspect
-- version it wrote.
-- AlterTable
ALTER TABLE "aspect" ADD COLUMN     "system_metadata" JSONB;

-- And with the time-series row. Each aspect has a table of its own (created on its first write, libs/db
-- timeseries-tables.ts): a column added to the partitioned table reaches all of its day partitions, and a nullable
-- column without a default changes no row.
-- Prisma's migration engine splits a script at every semicolon, in quotes too: the block's own are written \073.
DO E'DECLARE t text\073 BEGIN FOR t IN SELECT table_name FROM timeseries.aspect_table LOOP EXECUTE format(''ALTER TABLE timeseries.%I ADD COLUMN IF NOT EXISTS system_metadata JSONB'', t)\073 END LOOP\073 END';
