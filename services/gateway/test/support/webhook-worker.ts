/** The evaluation worker's webhooks (fan-out and delivery worker) in the test's process, on a harness's database. */
import { createLogger, type Config } from "@mdp/core";
import { createDatabase } from "@mdp/db";
import { closeRedis, createRedis } from "@mdp/queues";
import { setUpWebhooks, type RunningWebhooks } from "evaluation-worker";
import type { Harness } from "./gateway-harness";

export interface WebhookWorker {
  webhooks: RunningWebhooks;
  /** fans out until caught up (what the worker's loop does every WEBHOOK_POLL_MS) */
  fanOut(): Promise<void>;
  close(): Promise<void>;
}

/** `loop`: run the fan-out loop as the process does (else passes run when the test calls fanOut). */
export async function startWebhookWorker(
  h: Harness,
  { loop = false, config = {} }: { loop?: boolean; config?: Partial<Config> } = {},
): Promise<WebhookWorker> {
  const db = createDatabase(h.config.DATABASE_URL, { poolMax: 6 });
  const worker = createRedis(h.config.REDIS_URL, "worker");
  const producer = createRedis(h.config.REDIS_URL, "producer");
  const logger = createLogger("webhooks-test", h.config.LOG_LEVEL);
  const webhooks = setUpWebhooks(db, { worker, producer }, { ...h.config, ...config }, logger);
  if (loop) webhooks.start();
  else void webhooks.worker.run();
  await webhooks.worker.waitUntilReady();
  return {
    webhooks,
    async fanOut() {
      for (;;) {
        const pass = await webhooks.fanOut.pass();
        if (!pass || pass.events === 0) return;
      }
    },
    async close() {
      await webhooks.stop();
      await closeRedis(worker);
      await closeRedis(producer);
      await db.close();
    },
  };
}
