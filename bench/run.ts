/**
 * `pnpm bench [name...]`: runs the named benchmarks (all when none is named) against PostgreSQL and Redis found or
 * started as for `pnpm test`. Every result is printed as a ratio to a baseline measured in the same run.
 */
import path from "node:path";
import { ensureLocalServices } from "../scripts/local-services";
import { benchCost } from "./cost/cost.bench";
import { benchEvaluate } from "./evaluate/evaluate.bench";
import { benchGraphqlMemory } from "./graphql-memory/graphql-memory.bench";
import { benchIngest } from "./ingest/ingest.bench";
import { benchOnChange } from "./on-change/on-change.bench";
import { benchOutbox } from "./outbox/outbox.bench";
import { benchRegex } from "./regex/regex.bench";
import { benchTokens } from "./tokens/tokens.bench";
import { benchTruncate } from "./truncate/truncate.bench";
import { benchWebhooks } from "./webhooks/webhooks.bench";

const BENCHMARKS: Record<string, () => Promise<void>> = {
  cost: benchCost,
  evaluate: benchEvaluate,
  "graphql-memory": benchGraphqlMemory,
  ingest: benchIngest,
  "on-change": benchOnChange,
  outbox: benchOutbox,
  regex: benchRegex,
  tokens: benchTokens,
  truncate: benchTruncate,
  webhooks: benchWebhooks,
};

async function main(): Promise<void> {
  const names = process.argv.slice(2);
  const unknown = names.filter((n) => !BENCHMARKS[n]);
  if (unknown.length > 0)
    throw new Error(`unknown benchmark ${unknown.join(", ")}; known: ${Object.keys(BENCHMARKS).join(", ")}`);
  const services = await ensureLocalServices(path.resolve(__dirname, ".."), { reuseDefaults: true });
  process.env.TEST_DATABASE_URL = services.adminDatabaseUrl;
  process.env.REDIS_URL = services.redisUrl;
  try {
    for (const name of names.length > 0 ? names : Object.keys(BENCHMARKS)) await BENCHMARKS[name]!();
  } finally {
    await services.stop();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
