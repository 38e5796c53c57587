-- AlterTable
ALTER TABLE "access_token" ADD COLUMN     "family_id" UUID,
ADD COLUMN     "rotated_at" TIMESTAMPTZ(3),
ADD COLUMN     "rotated_from_id" UUID,
ADD COLUMN     "rotated_to_id" UUID;

-- CreateTable
CREATE TABLE "access_token_client" (
    "token_id" UUID NOT NULL,
    "ip" VARCHAR(64) NOT NULL,
    "user_agent" VARCHAR(256) NOT NULL,
    "last_seen_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "access_token_client_pkey" PRIMARY KEY ("token_id","ip","user_agent")
);

-- CreateTable
CREATE TABLE "access_token_operation_count" (
    "token_id" UUID NOT NULL,
    "day" DATE NOT NULL,
    "operation" VARCHAR(128) NOT NULL,
    "count" INTEGER NOT NULL,

    CONSTRAINT "access_token_operation_count_pkey" PRIMARY KEY ("token_id","day","operation")
);

-- CreateIndex
CREATE INDEX "access_token_operation_count_day_idx" ON "access_token_operation_count"("day");

-- CreateIndex
CREATE INDEX "access_token_family_id_idx" ON "access_token"("family_id") WHERE (revoked_at IS NULL);

-- AddForeignKey
ALTER TABLE "access_token_client" ADD CONSTRAINT "access_token_client_token_id_fkey" FOREIGN KEY ("token_id") REFERENCES "access_token"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "access_token_operation_count" ADD CONSTRAINT "access_token_operation_count_token_id_fkey" FOREIGN KEY ("token_id") REFERENCES "access_token"("id") ON DELETE CASCADE ON UPDATE CASCADE;
