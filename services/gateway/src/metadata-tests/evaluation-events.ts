import { QueueEvents } from "bullmq";
import type { Redis } from "ioredis";
import { closeRedis, QUEUE_NAMES } from "@mdp/queues";

/**
 * The evaluate-tests queue's events, through which waiting evaluate requests receive the worker's results. QueueEvents
 * blocks on its connection (XREAD), so it gets one of its own, duplicated from the producer connection but, as BullMQ
 * requires of blocking connections, never giving up a command.
 */
export async function openEvaluationEvents(
  redis: Redis,
  prefix: string,
): Promise<{ events: QueueEvents; close: () => Promise<void> }> {
  const connection = redis.duplicate({
    maxRetriesPerRequest: null,
    enableOfflineQueue: true,
    connectionName: "mdp-queue-events",
  });
  const events = new QueueEvents(QUEUE_NAMES.evaluate, { connection, prefix });
  await events.waitUntilReady();
  return {
    events,
    close: async () => {
      await events.close();
      await closeRedis(connection);
    },
  };
}
