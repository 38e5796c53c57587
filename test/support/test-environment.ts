/**
 * What every in-process test of a service starts from (the gateway's harness, the evaluation worker's fixture): a
 * fresh database of its own on the test PostgreSQL, a queue prefix of its own on the test Redis, and the config for
 * them.
 */
import { randomUUID } from "node:crypto";
import { loadConfig, type Config } from "@mdp/core";
import { createTestDatabase } from "@mdp/db/testing";

export interface TestEnvironment {
  config: Config;
  /** drops the database (ending any connection still open to it) */
  drop(): Promise<void>;
}

/** `label` names the database; `env` overrides the config's settings (a limit, a lease) for this test. */
export async function startTestEnvironment(label: string, env: Record<string, string> = {}): Promise<TestEnvironment> {
  const db = await createTestDatabase(label);
  const config = loadConfig({
    DATABASE_URL: db.url,
    REDIS_URL: process.env.REDIS_URL ?? "redis://127.0.0.1:6379",
    // a hash tag: on a Redis Cluster (pnpm test:cluster) each queue's keys must share one slot
    QUEUE_PREFIX: `{test-${randomUUID()}}`,
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? "silent",
    ...env,
  });
  return { config, drop: () => db.drop() };
}
