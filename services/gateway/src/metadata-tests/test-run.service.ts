import { createHash, randomUUID } from "node:crypto";
import { badInput, notFound, parseUrnField, type EntityRegistry, type Logger } from "@mdp/core";
import type { Database } from "@mdp/db";
import type { Producer } from "@mdp/queues";
import type { Actor } from "../auth/actor";
import { recordAudit } from "../audit/audit.service";
import { enqueueTask } from "../operations/task.service";
import type { PolicyEngine } from "../policies/policy-engine";

export const DEFAULT_RUN_BATCH_SIZE = 1000;
export const MAX_RUN_BATCH_SIZE = 10_000;
const TEST_RESULTS_ASPECT = "testResults";

export interface RunTestInput {
  urn: string;
  push?: boolean | null;
  batchSize?: number | null;
}

/**
 * runTest: evaluates one test against every entity its on clause selects, as a background task of the evaluation
 * worker. The durable task row (and its audit record) is written before the job is queued; the task id is the job id,
 * so getTaskStatus, cancelTask and the queue dashboard all follow it. An identical run still waiting or active is
 * returned instead of starting a second one over the same entities.
 */
export class TestRunService {
  constructor(
    private readonly db: Database,
    private readonly registry: EntityRegistry,
    private readonly engine: PolicyEngine,
    private readonly producer: Producer<"evaluate">,
    private readonly logger: Logger,
  ) {}

  async run(actor: Actor, input: RunTestInput): Promise<string> {
    await this.engine.require(actor, "MANAGE_TESTS", "run metadata tests");
    parseUrnField("urn", input.urn, "test");
    const push = input.push ?? true;
    const batchSize = input.batchSize ?? DEFAULT_RUN_BATCH_SIZE;
    if (!Number.isInteger(batchSize) || batchSize < 1 || batchSize > MAX_RUN_BATCH_SIZE) {
      throw badInput(`batchSize must be a whole number from 1 to ${MAX_RUN_BATCH_SIZE}`);
    }
    const test = await this.db.prisma.metadataTest.findUnique({ where: { urn: input.urn } });
    if (!test) throw notFound(`Test ${input.urn} does not exist`);
    if (push) this.refuseUnstorable(test.onTypes);

    const request = { kind: "runTest" as const, testUrn: input.urn, push, batchSize };
    const dedupKey = createHash("sha256").update(JSON.stringify(request)).digest("hex");
    const { taskId, existing } = await this.db.prisma.$transaction(async (tx) => {
      await tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtext(${dedupKey}))`;
      const running = await tx.task.findFirst({
        // A run being cancelled will not do what is asked again.
        where: { dedupKey, state: { in: ["waiting", "active"] }, cancelRequested: false },
        orderBy: { createdAt: "asc" },
        select: { id: true },
      });
      if (running) return { taskId: running.id, existing: true };
      const id = randomUUID();
      await tx.task.create({
        data: {
          id,
          type: "EVALUATE_TESTS",
          state: "waiting",
          request,
          dedupKey,
          progress: { evaluated: 0, total: 0, passing: 0, failing: 0, notApplicable: 0, percent: 0 },
          createdBy: actor.urn,
        },
      });
      await recordAudit(tx, actor, "test.run", input.urn, { taskId: id, push, batchSize });
      return { taskId: id, existing: false };
    });
    // A task row whose job never reached Redis (a crash between the two) gets its job now: the job id is the task id.
    if (existing && (await this.producer.queue.getJob(taskId))) return taskId;
    await enqueueTask(this.db, this.logger, { id: taskId, what: "a test run", wroteRow: !existing }, () =>
      this.producer.enqueue(taskId, { ...request, taskId, actorUrn: actor.urn }),
    );
    return taskId;
  }

  private refuseUnstorable(onTypes: readonly string[]): void {
    const unstorable = onTypes.filter(
      (type) => this.registry.entityTypes().includes(type) && !this.registry.aspectsOf(type).has(TEST_RESULTS_ASPECT),
    );
    if (unstorable.length > 0) {
      throw badInput(
        `push: entity type ${unstorable.join(", ")} has no ${TEST_RESULTS_ASPECT} aspect in the entity registry, ` +
          "so results cannot be stored; run the test with push: false",
      );
    }
  }
}
