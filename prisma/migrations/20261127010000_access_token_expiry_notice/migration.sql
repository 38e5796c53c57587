-- EXPIRING_SOON platform events (docs/events.md): one row per token and threshold told, written in the same statement
-- as its event, so each is told once however many chores run at once or restart.
-- CreateTable
CREATE TABLE "access_token_expiry_notice" (
    "token_id" UUID NOT NULL,
    "days" INTEGER NOT NULL,
    "notified_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "access_token_expiry_notice_pkey" PRIMARY KEY ("token_id","days")
);

-- AddForeignKey
ALTER TABLE "access_token_expiry_notice" ADD CONSTRAINT "access_token_expiry_notice_token_id_fkey" FOREIGN KEY ("token_id") REFERENCES "access_token"("id") ON DELETE CASCADE ON UPDATE CASCADE;
