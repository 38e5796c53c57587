/** The webhook worker's fan-out and dispatcher in the test's process, on a harness's database. */
import { createLogger, type Config } from "@mdp/core";
import { createDatabase, type Database } from "@mdp/db";
import { setUpWebhooks, type RunningWebhooks } from "webhook-worker";
import type { Harness } from "./gateway-harness";

export interface WebhookWorker {
  webhooks: RunningWebhooks;
  db: Database;
  /** fans out until caught up (what the worker's loop does every WEBHOOK_POLL_MS) */
  fanOut(): Promise<void>;
  /** stops claiming deliveries (the ones in flight go on) until resume */
  pause(): Promise<void>;
  resume(): void;
  close(): Promise<void>;
}

/** `loop`: run the fan-out loop as the process does (else passes run when the test calls fanOut). */
export async function startWebhookWorker(
  h: Harness,
  { loop = false, config = {} }: { loop?: boolean; config?: Partial<Config> } = {},
): Promise<WebhookWorker> {
  const db = createDatabase(h.config.DATABASE_URL, { poolMax: 6 });
  const logger = createLogger("webhooks-test", h.config.LOG_LEVEL);
  const webhooks = setUpWebhooks(db, { ...h.config, ...config }, logger);
  if (loop) webhooks.start();
  else webhooks.dispatcher.start();
  return {
    webhooks,
    db,
    async fanOut() {
      for (;;) {
        const pass = await webhooks.fanOut.pass();
        if (!pass || pass.events === 0) return;
      }
    },
    pause: () => webhooks.dispatcher.stop(),
    resume: () => webhooks.dispatcher.start(),
    async close() {
      await webhooks.stop();
      await db.close();
    },
  };
}
