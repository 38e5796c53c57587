-- Per schedule (any kind), the last cron slot a firing handled and the slots that could not run: a slot that passed
-- while Redis had lost its job scheduler runs once, late, and the ones before it are counted here.
CREATE TABLE "schedule_slot" (
    "kind" VARCHAR(64) NOT NULL,
    "schedule_id" TEXT NOT NULL,
    "cron" VARCHAR(256) NOT NULL,
    "last_slot_at" TIMESTAMPTZ(3) NOT NULL,
    "missed_runs" INTEGER NOT NULL DEFAULT 0,
    "last_missed_at" TIMESTAMPTZ(3),

    CONSTRAINT "schedule_slot_pkey" PRIMARY KEY ("kind","schedule_id")
);
