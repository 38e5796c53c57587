import { createHash } from "node:crypto";
import { AppError, METADATA_CHANGE_LOG, type Logger, type PeriodicLoop, type Privilege } from "@mdp/core";
import {
  advanceEventCursor,
  eventsAfter,
  inTransaction,
  insertAuditEvent,
  latestAspectsOfEntities,
  lockEventCursor,
  onChangeTestsNamed,
  onChangeTestsSelecting,
  ownerKey,
  prunePlatformEvents,
  sequencePlatformEvents,
  TEST_ACTIONS_APP_SOURCE,
  suspendUnlessOwnerMay,
  type PlatformEventRow,
} from "@mdp/db";
import type { EntitySnapshot } from "@mdp/metadata-tests";
import { runTestRequest, type Producer, type RateLimits } from "@mdp/queues";
import { scheduledTestNeeds } from "@mdp/schedules";
import type pg from "pg";
import type { EvaluateDeps } from "./evaluation-deps";
import { EvaluationLimitError, StoredDefinitionError } from "./evaluation-pool";
import type { StoredTest } from "./evaluation.store";
import { countOnChange } from "./evaluation-metrics";
import { TEST_RESULTS_ASPECT, type PushItem } from "./results.pusher";
import { outboxConsumerLoop, pruneUntilCaughtUp } from "./outbox-consumer";

/** The consumer's name in platform_event_cursor. */
export const ON_CHANGE_CONSUMER = "evaluate-on-change";

/** The audit action of a test whose evaluation on change was suspended: its owner lost what it needs. */
export const ON_CHANGE_SUSPENDED_ACTION = "test.onChange.suspended";

export interface OnChangeSettings {
  /** ON_CHANGE_BATCH_SIZE: events read per pass (the entities they name are evaluated together, each once) */
  batchSize: number;
  /** ROOT_USER_URN: the root user's built-in policy counts when an owner's grants are read */
  rootUserUrn: string;
  /** whether results of entities of this type can be stored (the registry gives it a testResults aspect) */
  storable: (entityType: string) => boolean;
  /** starts a test's run over every entity it selects (for its owner): after its definition changed */
  startRun: (test: StoredTest) => Promise<void>;
  /** where the owners' evaluation time is charged (RATE_LIMIT_EVALUATION_SECONDS_PER_MINUTE), when limits are on */
  rateLimits?: Pick<RateLimits, "charge">;
}

/** What one pass did. */
export interface OnChangePass {
  /** events read (the cursor moved past them) */
  events: number;
  /** distinct entities evaluated: each changed entity once per pass, however many of its changes the pass read */
  entities: number;
  /** entities that got a new testResults version */
  pushed: number;
  /** test runs started for tests whose definition changed */
  runs: number;
  /** tests skipped because their owner lacks what they need now (suspended) */
  refused: number;
}

/**
 * Evaluation on change (docs/evaluation-on-change.md): the first consumer of the platform-event outbox. Each pass, in
 * one transaction: lock this consumer's cursor (another worker holding it: the pass does nothing), read the next
 * events of transactions that have ended, re-evaluate each entity they name once (changes to one entity read in one
 * pass coalesce) against the tests that evaluate on change and select its type, push the results, and move the
 * cursor past the events. The push and the cursor commit together: a worker that dies, or PostgreSQL or Redis going
 * away, mid-pass leaves the cursor where it was, and the next pass (on any worker) does the work again; Redis is not
 * involved at all but for a test run's job. Entities are read after the events that name them committed, and a
 * write commits whole, so no entity is evaluated against half a change.
 *
 * The work is the tests' owners', never the writer's: each owner's tests are evaluated as that owner's task in the
 * pool (its share of the threads against every other caller, its thread time charged to its evaluation-time budget),
 * the pushed versions are stamped with the owner (as a scheduled run's are), and a test whose owner lacks
 * what it needs now (MANAGE_TESTS, and what its actions write) is suspended, as a scheduled test's firing is.
 */
export class OnChangeEvaluator {
  constructor(
    private readonly deps: Pick<EvaluateDeps, "db" | "pool" | "pusher" | "ownerPrivileges" | "logger">,
    private readonly settings: OnChangeSettings,
  ) {}

  /**
   * Passes until one reads less than a batch (caught up) or `maxPasses` ran; null when another worker holds the
   * cursor. The sum of what the passes did.
   */
  async drain(maxPasses = 10): Promise<OnChangePass | null> {
    const total: OnChangePass = { events: 0, entities: 0, pushed: 0, runs: 0, refused: 0 };
    for (let i = 0; i < maxPasses; i++) {
      const pass = await this.pass();
      if (!pass) return i === 0 ? null : total;
      for (const key of Object.keys(total) as Array<keyof OnChangePass>) total[key] += pass[key];
      if (pass.events < this.settings.batchSize) break;
    }
    return total;
  }

  /** One pass (see the class); null when another worker holds the cursor. */
  async pass(): Promise<OnChangePass | null> {
    // Committed events get their positions first, in a transaction of their own (see sequencePlatformEvents).
    await inTransaction(this.deps.db.pool, (client) => sequencePlatformEvents(client, this.settings.batchSize));
    return inTransaction(this.deps.db.pool, async (client) => {
      const cursor = await lockEventCursor(client, ON_CHANGE_CONSUMER);
      if (cursor === null) return null;
      const events = await eventsAfter(client, cursor, this.settings.batchSize);
      const pass: OnChangePass = { events: events.length, entities: 0, pushed: 0, runs: 0, refused: 0 };
      if (events.length === 0) return pass;
      const { changed, edited } = this.split(events);
      const refused = new Set<string>();
      const { entities, pushed } = await this.evaluateChanged(client, changed, refused);
      pass.entities = entities;
      pass.pushed = pushed;
      pass.runs = await this.runEdited(edited, refused);
      pass.refused = refused.size;
      await advanceEventCursor(client, ON_CHANGE_CONSUMER, events.at(-1)!.seq);
      countOnChange(pass, events);
      return pass;
    });
  }

  /**
   * The entities whose aspects changed (each once, with its type), and the tests whose definition changed. A push of
   * results (testResults) is not a change tests read: evaluating again on it would only find the same results. What
   * tests' actions wrote is not evaluated again either: actions that undo each other would loop forever.
   */
  private split(events: readonly PlatformEventRow[]): { changed: Map<string, string>; edited: Set<string> } {
    const changed = new Map<string, string>();
    const edited = new Set<string>();
    for (const event of events) {
      // Only aspect writes change what tests read: an EntityChangeEvent_v1 (a token, a task, a result flipping, a
      // suspension) is the service telling of its own work, and a flip evaluated again would find the same results.
      if (event.eventType !== METADATA_CHANGE_LOG) continue;
      if (event.entityType === "test" && event.aspectName === "testInfo") edited.add(event.entityUrn);
      else if (
        event.aspectName !== TEST_RESULTS_ASPECT &&
        event.appSource !== TEST_ACTIONS_APP_SOURCE &&
        this.settings.storable(event.entityType)
      ) {
        changed.set(event.entityUrn, event.entityType);
      }
    }
    return { changed, edited };
  }

  private async evaluateChanged(
    client: pg.PoolClient,
    changed: ReadonlyMap<string, string>,
    refused: Set<string>,
  ): Promise<{ entities: number; pushed: number }> {
    if (changed.size === 0) return { entities: 0, pushed: 0 };
    const tests = await this.permitted(await onChangeTestsSelecting(client, [...new Set(changed.values())]), refused);
    if (tests.length === 0) return { entities: 0, pushed: 0 };
    const selected = [...changed].filter(([, type]) => tests.some((t) => t.onTypes.includes(type))).map(([u]) => u);
    if (selected.length === 0) return { entities: 0, pushed: 0 };
    // Lock before read, as a run's batch does: a fresher push of these entities commits before the read, or waits
    // and merges onto this one; it is never overwritten by it.
    await this.deps.pusher.lock(client, selected);
    const entities = new Map<string, EntitySnapshot>();
    for (const a of await latestAspectsOfEntities(client, selected)) {
      const entity = entities.get(a.urn) ?? { urn: a.urn, entityType: a.entityType, aspects: {} };
      entity.aspects[a.aspect] = a.value;
      entities.set(a.urn, entity);
    }
    // One task per owner in the pool: each owner's share of the threads, as its own evaluate calls would have.
    const byOwner = new Map<string, StoredTest[]>();
    for (const test of tests) byOwner.set(ownerKey(owner(test)), [...(byOwner.get(ownerKey(owner(test))) ?? []), test]);
    const at = Date.now();
    const groups = await Promise.all([...byOwner.values()].map((group) => this.evaluateForOwner(group, entities, at)));
    const items = groups.flat();
    const pushed = await this.deps.pusher.push(client, items);
    return { entities: entities.size, pushed };
  }

  private async evaluateForOwner(
    tests: StoredTest[],
    entities: ReadonlyMap<string, EntitySnapshot>,
    at: number,
  ): Promise<PushItem[]> {
    const { ownerUrn } = tests[0]!;
    const urns = [...entities.values()]
      .filter((e) => tests.some((t) => t.onTypes.includes(e.entityType)))
      .map((e) => e.urn);
    if (urns.length === 0) return [];
    const testUrns = tests.map((t) => t.urn);
    // One item per entity: an entity whose evaluation a limit stops is left out alone, and the pool evaluates the
    // others again (evaluation-pool.ts), rather than one slow entity costing the whole batch its results.
    const { outcomes, threadMs } = await this.deps.pool.evaluateTimed(
      { actor: ownerUrn, at, tests, entities },
      urns.map((urn) => ({ urns: [urn], testUrns, withValues: true })),
    );
    await this.settings.rateLimits?.charge({ urn: ownerUrn }, "evaluationTime", threadMs);
    const evaluations = outcomes.flatMap((outcome) =>
      outcome instanceof EvaluationLimitError || outcome instanceof StoredDefinitionError ? [] : outcome,
    );
    const stopped = outcomes.flatMap((outcome, i) => (Array.isArray(outcome) ? [] : [{ urn: urns[i]!, outcome }]));
    if (stopped.length > 0) {
      // Nothing a later pass could change: these entities' results stay as they were, the others' are pushed.
      this.deps.logger.warn(
        { owner: ownerUrn, tests: testUrns, entities: stopped.slice(0, 10).map((s) => s.urn), left: stopped.length },
        `evaluation on change left out: ${stopped[0]!.outcome.message}`,
      );
    }
    const evaluated = new Set(testUrns);
    return evaluations.map((evaluation) => ({
      entityType: entities.get(evaluation.urn)!.entityType,
      evaluation,
      evaluated,
      // As a scheduled run's: written by the owner, through no token of a caller (the test's actions are still
      // bounded by the token the owner set the test with, test-actions.ts).
      actorUrn: ownerUrn,
    }));
  }

  /** Tests whose definition changed, that evaluate on change: a run over every entity each selects, for its owner. */
  private async runEdited(edited: ReadonlySet<string>, refused: Set<string>): Promise<number> {
    if (edited.size === 0) return 0;
    const tests = await this.permitted(await onChangeTestsNamed(this.deps.db.pool, [...edited]), refused);
    let runs = 0;
    for (const test of tests) {
      if (!test.onTypes.every(this.settings.storable)) continue; // its results could not be pushed, as runTest refuses
      await this.settings.startRun(test);
      runs++;
    }
    return runs;
  }

  /**
   * Of these tests, those whose owner holds now what their work needs (read afresh, through the token the owner set
   * the test with); the others are suspended (audited once, like a scheduled test's firing) and left out.
   */
  private async permitted(tests: StoredTest[], refused: Set<string>): Promise<StoredTest[]> {
    const grants = new Map<string, Promise<ReadonlySet<Privilege>>>();
    const kept: StoredTest[] = [];
    for (const test of tests) {
      const key = ownerKey(owner(test));
      if (!grants.has(key)) grants.set(key, this.deps.ownerPrivileges(owner(test)));
      const held = await grants.get(key)!;
      const needs = scheduledTestNeeds(test.definition);
      if (needs.every((p) => held.has(p))) {
        kept.push(test);
        continue;
      }
      refused.add(test.urn);
      await suspendUnlessOwnerMay(this.deps.db.prisma, {
        work: { kind: "SCHEDULED_TEST", urn: test.urn },
        ownerUrn: test.ownerUrn,
        ownerTokenId: test.ownerTokenId,
        needs,
        rootUserUrn: this.settings.rootUserUrn,
        action: ON_CHANGE_SUSPENDED_ACTION,
        via: "test-on-change",
        trigger: "change",
      });
      this.deps.logger.warn(
        { test: test.urn, owner: test.ownerUrn, missingPrivileges: needs.filter((p) => !held.has(p)) },
        "evaluation on change suspended: the test's owner no longer holds what it needs",
      );
    }
    return kept;
  }
}

function owner(test: StoredTest) {
  return { urn: test.ownerUrn, tokenId: test.ownerTokenId, suspended: false };
}

/**
 * Starts a test's run (runTest with push and the default batch size) for its owner, as a scheduled firing does,
 * audited as `test.run` with trigger `change`. Its dedup key is runTest's with the definition's hash: a run of the
 * same definition still waiting or active is joined, but a run started before an edit is not (it applies the edit
 * only from its next batch on, so the entities it had evaluated would keep results of the old definition).
 */
export function onChangeRunStarter(
  deps: Pick<EvaluateDeps, "tasks" | "db">,
  producer: Producer<"evaluate">,
  rateLimits?: Pick<RateLimits, "consume">,
): (test: StoredTest) => Promise<void> {
  return async (test) => {
    // Counted as the owner's runTest calls, as a scheduled firing is: edits would otherwise start any number of runs
    // over everything a test selects. Past the limit no run starts (audited); a later edit or runTest catches up.
    try {
      await rateLimits?.consume({ urn: test.ownerUrn }, "testRuns");
    } catch (error) {
      if (!(error instanceof AppError) || error.code !== "TOO_MANY_REQUESTS") throw error;
      await insertAuditEvent(deps.db.prisma, {
        actorUrn: test.ownerUrn,
        action: "test.run.rateLimited",
        targetUrn: test.urn,
        details: { trigger: "change", ...(error.details as Record<string, unknown>) },
      });
      return;
    }
    const { request, dedupKey: runTestKey } = runTestRequest(test.urn);
    const dedupKey = createHash("sha256").update(`${runTestKey}\n${test.hash}`).digest("hex");
    await deps.tasks.create(
      {
        type: "EVALUATE_TESTS",
        request,
        dedupKey,
        progress: { evaluated: 0, total: 0, passing: 0, failing: 0, notApplicable: 0, percent: 0 },
        createdBy: test.ownerUrn,
        what: "a test run on its change",
        afterInsert: (tx, id) =>
          insertAuditEvent(tx, {
            actorUrn: test.ownerUrn,
            action: "test.run",
            targetUrn: test.urn,
            details: { taskId: id, push: request.push, batchSize: request.batchSize, trigger: "change" },
          }),
      },
      {
        enqueue: (id) =>
          producer.enqueue(id, {
            ...request,
            taskId: id,
            actorUrn: test.ownerUrn,
          }),
        jobExists: async (id) => Boolean(await producer.queue.getJob(id)),
      },
    );
  };
}

/** The outbox's retention: events older than PLATFORM_EVENT_RETENTION_DAYS that every consumer has read. */
export const EVENT_PRUNE_EVERY_MS = 60_000;

export async function prunePlatformEventsFully(
  deps: Pick<EvaluateDeps, "db">,
  retentionDays: number,
  budgetMs = 20_000,
): Promise<number> {
  return pruneUntilCaughtUp((batch) => prunePlatformEvents(deps.db.pool, retentionDays, batch), budgetMs);
}

/** Each worker process's share of evaluation on change (outboxConsumerLoop). */
export function onChangeLoop(evaluator: OnChangeEvaluator, pollMs: number, logger: Logger): PeriodicLoop {
  return outboxConsumerLoop("evaluate-on-change", () => evaluator.drain(), pollMs, logger);
}
