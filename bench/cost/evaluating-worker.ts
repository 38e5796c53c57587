/**
 * evaluate's worker floor: a bare BullMQ worker, in a process of its own like the evaluation worker and with its
 * concurrency, that per job reads one entity's latest aspects from PostgreSQL (the aspects part of the evaluation
 * worker's read: libs/db's evaluation-input.repository.ts, a copy; keep them in step) and evaluates the ACTIVE tests
 * of its type, read once at start, in this process with @mdp/metadata-tests (unless IN_THREADS=1), once per request the
 * job carries (http-floor-server.ts's `/batched` puts that count in the job, as the gateway puts one item per request),
 * answering each request's evaluation. No task rows, authority checks, replies over pub/sub or limits.
 *
 * IN_THREADS=1: the same worker evaluating each job in a piscina pool configured as the evaluation worker's
 * (services/evaluation-worker/src/evaluation-pool.ts; keep them in step): its threads (EVALUATION_THREADS' default),
 * all started at once and kept, a queue of one task per job run at once, each thread's heap limits and semi-space, and
 * each task abortable at the time limit (one timer per task: no per-request watchdog slots, no fair share). The job's
 * requests go to one thread as one task, the entity's aspects as the JSON text read, the tests handed to each thread
 * once at its start (evaluating-thread.ts). What an evaluation kept off the event loop costs a bare worker.
 * Exits on SIGTERM.
 */
import path from "node:path";
import { Worker } from "bullmq";
import pg from "pg";
import {
  definitionFromJson,
  evaluateEntity,
  type EntityEvaluation,
  type EntitySnapshot,
  type TestToRun,
} from "@mdp/metadata-tests";
import { closeRedis, createRedis } from "@mdp/queues";
import type { FloorTask } from "./evaluating-thread";
import { productLikePool, THREADS } from "./evaluation-pool-settings";

/** The evaluation worker's read of its entities' latest aspects (ENTITIES_AND_TESTS' `aspects`), as one JSON text. */
const ASPECTS = `
  SELECT COALESCE((
      SELECT json_agg(json_build_object('urn', l.urn, 'entityType', l.entity_type, 'aspect', l.aspect_name,
                                        'value', l.value))
        FROM (SELECT DISTINCT ON (urn, aspect_name) urn, entity_type, aspect_name, value
                FROM aspect WHERE urn = ANY($1::text[]) ORDER BY urn, aspect_name, version DESC) l), '[]')::text AS doc`;

async function main(): Promise<void> {
  const urn = process.env.ENTITY_URN!;
  const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 10 });
  // The tests an evaluate of the entity runs: every ACTIVE test whose on.types names its type.
  const { rows } = await pool.query<{ urn: string; definition: unknown }>(
    `SELECT t.urn, t.definition FROM metadata_test t
      WHERE t.state = 'ACTIVE' AND t.on_types && ARRAY(SELECT DISTINCT entity_type FROM aspect WHERE urn = $1)
      ORDER BY t.urn`,
    [urn],
  );
  const tests: TestToRun[] = rows.map((r) => ({ urn: r.urn, definition: definitionFromJson(r.definition) }));
  const concurrency = Number(process.env.CONCURRENCY ?? 8);
  const threads =
    process.env.IN_THREADS === "1"
      ? productLikePool<FloorTask | null, EntityEvaluation[]>(
          path.join(__dirname, "evaluating-thread.cjs"),
          { tests: rows },
          concurrency,
        )
      : undefined;
  // Every thread loaded (a probe each; an idle thread takes one), so that the warm-up is not spent loading modules.
  if (threads) await Promise.all(Array.from({ length: THREADS }, () => threads.pool.run(null)));
  const connection = createRedis(process.env.REDIS_URL!, "worker");
  const worker = new Worker(
    process.env.QUEUE_NAME!,
    async (job) => {
      const { rows: read } = await pool.query<{ doc: string }>({
        name: "floor-evaluation-aspects",
        text: ASPECTS,
        values: [[urn]],
      });
      const requests = Number((job.data as { requests?: number }).requests ?? 1);
      if (threads) return threads.run({ urn, aspectsJson: read[0]!.doc, at: Date.now(), requests });
      const aspects = JSON.parse(read[0]!.doc) as { urn: string; entityType: string; aspect: string; value: unknown }[];
      const entity: EntitySnapshot = { urn, entityType: aspects[0]!.entityType, aspects: {} };
      for (const a of aspects) entity.aspects[a.aspect] = a.value;
      const at = Date.now();
      return Array.from({ length: requests }, () => evaluateEntity(tests, entity, at, true));
    },
    { connection, prefix: process.env.QUEUE_PREFIX!, concurrency },
  );
  await worker.waitUntilReady();
  process.stdout.write(
    `bare evaluating worker running (${tests.length} tests${threads ? `, ${THREADS} threads` : ""})\n`,
  );
  process.on("SIGTERM", () => {
    void worker
      .close()
      .then(() => Promise.all([closeRedis(connection), pool.end(), threads?.pool.destroy()]))
      .then(() => process.exit(0));
  });
}

void main();
