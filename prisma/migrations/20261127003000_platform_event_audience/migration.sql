-- Who may read an event (@mdp/core canReadPlatformEvent): an EntityChangeEvent_v1's category, and the user it is
-- about (a token's actor, a task's creator, a schedule's owner), who reads it without the category's privilege.
ALTER TABLE "platform_event" ADD COLUMN "category" VARCHAR(64);
ALTER TABLE "platform_event" ADD COLUMN "subject_actor" TEXT;
