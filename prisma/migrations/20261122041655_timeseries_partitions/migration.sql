-- DropTable
DROP TABLE "timeseries_aspect";

-- Time-series storage, hand-written: Prisma manages only the public schema.
-- One range-partitioned table per time-series aspect, created when the aspect first receives data, with one
-- partition per UTC day. Truncation drops whole partitions that lie before its cutoff and deletes in batches only
-- inside the partition the cutoff falls in. Row counts per partition are kept here, in the same transaction as every
-- insert and delete, so counts are exact without scanning.
CREATE SCHEMA "timeseries";

CREATE TABLE "timeseries"."aspect_table" (
    "entity_type" TEXT NOT NULL,
    "aspect_name" TEXT NOT NULL,
    "table_name" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "aspect_table_pkey" PRIMARY KEY ("entity_type", "aspect_name"),
    CONSTRAINT "aspect_table_table_name_key" UNIQUE ("table_name")
);

CREATE TABLE "timeseries"."partition" (
    "table_name" TEXT NOT NULL,
    "parent_table" TEXT NOT NULL,
    "from_millis" BIGINT NOT NULL,
    "to_millis" BIGINT NOT NULL,
    "row_count" BIGINT NOT NULL DEFAULT 0,

    CONSTRAINT "partition_pkey" PRIMARY KEY ("table_name"),
    CONSTRAINT "partition_parent_from_key" UNIQUE ("parent_table", "from_millis"),
    CONSTRAINT "partition_parent_fkey" FOREIGN KEY ("parent_table") REFERENCES "timeseries"."aspect_table"("table_name") ON DELETE CASCADE
);
