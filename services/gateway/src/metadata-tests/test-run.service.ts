import { z } from "zod";
import { badInput, notFound, type EntityRegistry, type Logger } from "@mdp/core";
import { findTest, readerPosition, type Database } from "@mdp/db";
import { DEFAULT_RUN_BATCH_SIZE, MAX_RUN_BATCH_SIZE, runTestRequest, type Producer } from "@mdp/queues";
import { TaskLifecycle } from "@mdp/tasks";
import type { Actor } from "../auth/actor";
import { recordAudit } from "../audit/audit.service";
import type { RateLimits } from "../shared/rate-limits";
import { said, urnField } from "../shared/validate";

const TEST_RESULTS_ASPECT = "testResults";

const batchSizeWords = said((at) => `${at} must be a whole number from 1 to ${MAX_RUN_BATCH_SIZE}`);
export const runTestArgs = z.object({
  urn: urnField("test"),
  push: z
    .boolean()
    .nullish()
    .transform((push) => push ?? true),
  batchSize: z
    .number()
    .int(batchSizeWords)
    .min(1, batchSizeWords)
    .max(MAX_RUN_BATCH_SIZE, batchSizeWords)
    .nullish()
    .transform((batchSize) => batchSize ?? DEFAULT_RUN_BATCH_SIZE),
});

export interface TestRunServiceDeps {
  db: Database;
  registry: EntityRegistry;
  producer: Producer<"evaluate">;
  logger: Logger;
  /** RATE_LIMIT_TEST_RUNS_PER_MINUTE, met once the request has passed its checks (a refusal costs nothing) */
  rateLimits?: Pick<RateLimits, "consume">;
}

/**
 * runTest: evaluates one test against every entity its on clause selects, as a background task of the evaluation
 * worker. The durable task row (and its audit record) is written before the job is queued; the task id is the job id,
 * so getTaskStatus, cancelTask and the queue dashboard all follow it. An identical run still waiting or active is
 * returned instead of starting a second one over the same entities.
 */
export class TestRunService {
  private readonly tasks: TaskLifecycle;

  private readonly db: Database;
  private readonly registry: EntityRegistry;
  private readonly producer: Producer<"evaluate">;
  private readonly rateLimits: TestRunServiceDeps["rateLimits"];

  constructor(deps: TestRunServiceDeps) {
    this.db = deps.db;
    this.registry = deps.registry;
    this.producer = deps.producer;
    this.rateLimits = deps.rateLimits;
    this.tasks = new TaskLifecycle(deps.db, deps.logger);
  }

  async run(actor: Actor, { push, batchSize, ...input }: z.output<typeof runTestArgs>): Promise<string> {
    const test = await findTest(this.db.prisma, input.urn);
    if (!test) throw notFound(`Test ${input.urn} does not exist`);
    if (push) this.refuseUnstorable(test.onTypes);
    await this.rateLimits?.consume(actor, "testRuns");

    // The caller's own run (joined only by its own identical requests): its pushed actions act with its authority.
    const { request, dedupKey } = runTestRequest(input.urn, actor, push, batchSize);
    // The caller's recent write (an ingestion): a run without push reads a replica only once it has replayed it.
    const readAfter = await readerPosition();
    const { taskId } = await this.tasks.create(
      {
        type: "EVALUATE_TESTS",
        request,
        dedupKey, // a run being cancelled will not do what is asked again: not shared
        progress: { evaluated: 0, total: 0, passing: 0, failing: 0, notApplicable: 0, percent: 0 },
        createdBy: actor.urn,
        createdVia: actor.tokenId ?? null,
        what: "a test run",
        afterInsert: (tx, id) => recordAudit(tx, actor, "test.run", input.urn, { taskId: id, push, batchSize }),
      },
      {
        enqueue: (id) =>
          this.producer.enqueue(id, {
            ...request,
            taskId: id,
            actorUrn: actor.urn,
            ...(actor.tokenId !== undefined && { actorTokenId: actor.tokenId }),
            ...(readAfter !== undefined && { readAfter }),
          }),
        jobExists: async (id) => Boolean(await this.producer.getJob(id)),
      },
    );
    return taskId;
  }

  private refuseUnstorable(onTypes: readonly string[]): void {
    const unstorable = unstorableTypes(this.registry, onTypes);
    if (unstorable.length > 0) {
      throw badInput(
        `push: entity type ${unstorable.join(", ")} has no ${TEST_RESULTS_ASPECT} aspect in the entity registry, ` +
          "so results cannot be stored; run the test with push: false",
      );
    }
  }
}

/** The entity types among `onTypes` whose results cannot be pushed: the registry gives them no testResults aspect. */
export function unstorableTypes(registry: EntityRegistry, onTypes: readonly string[]): string[] {
  return onTypes.filter(
    (type) => registry.entityTypes().includes(type) && !registry.aspectsOf(type).has(TEST_RESULTS_ASPECT),
  );
}
