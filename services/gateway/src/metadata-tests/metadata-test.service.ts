import type { z } from "zod";
import { parseArgs } from "../shared/validate";
import { conflict, notFound, type Config, type EntityRegistry, type Logger } from "@mdp/core";
import {
  deleteTest,
  entityExists,
  entityWithLatestAspect,
  findTest,
  inPrismaTransaction,
  insertTest,
  insertTestChangeEvent,
  isUniqueViolation,
  findScheduleSlot,
  lockScheduleOwner,
  lockTest,
  type MetadataTest,
  notFoundWhenMissing,
  type Prisma,
  type PrismaClient,
  type Queryable,
  type ScheduleSlotRow,
  replicaReads,
  requireOnChangeRoom,
  requireScheduleRoom,
  type StaleReads,
  testsSelectingType,
  updateTest,
} from "@mdp/db";
import {
  normalizedDefinitionText,
  readTestResults,
  TestDefinitionError,
  withoutValues,
  type FailedRule,
  type ParsedDefinition,
} from "@mdp/metadata-tests";
import type { ScheduleSyncRequests, TestSchedules } from "@mdp/queues";
import { ownedBy, type Actor } from "../auth/actor";
import { recordAudit } from "../audit/audit.service";
import type { PolicyEngine } from "../policies/policy-engine";
import { requireActionPrivileges } from "./action-privileges";
import {
  actionsOf,
  auditDetails,
  entityArgs,
  listTestsArgs,
  runEventsArgs,
  storedTest,
  TEST_RESULTS_ASPECT,
  testArgs,
  testContracts,
  testResultHistoryArgs,
  validateArgs,
  type Contracts,
  type TestResultTransitionView,
  type TestResultsView,
} from "./metadata-test-contracts";
import { acceptDefinition } from "./test-definition";

export interface MetadataTestServiceDeps {
  prisma: PrismaClient;
  /** plain pg, for the reads of Test.results and Test.batchRunEvents */
  pool: Queryable;
  engine: PolicyEngine;
  registry: EntityRegistry;
  config: Pick<
    Config,
    "URN_NAMESPACE" | "SCHEDULE_MIN_INTERVAL_SECONDS" | "MAX_SCHEDULES_PER_USER" | "MAX_ON_CHANGE_TESTS_PER_USER"
  >;
  /** the tests' BullMQ job schedulers, read for their next runs (the schedule sync alone writes them) */
  schedules: TestSchedules | undefined;
  logger: Logger | undefined;
  /** where a write asks for its test's scheduler to follow the row */
  scheduleSync: Pick<ScheduleSyncRequests, "request"> | undefined;
  /** where the listings and results read (Database.stale) */
  reads: StaleReads;
}

/**
 * Metadata-test definitions (docs/api.md "Metadata tests"): changes need MANAGE_TESTS and are audited in
 * their own transaction; reads need VIEW_TESTS. There is no cache of tests anywhere: the evaluation worker reads them
 * from PostgreSQL for every evaluation, so a change here is what the very next evaluation uses.
 */
export class MetadataTestService {
  /** createTest's and updateTest's contracts, which read the registry and the schedule's minimum interval */
  readonly contracts: Contracts;

  private readonly prisma: PrismaClient;
  private readonly pool: Queryable;
  private readonly engine: PolicyEngine;
  private readonly registry: EntityRegistry;
  private readonly config: MetadataTestServiceDeps["config"];
  private readonly schedules: MetadataTestServiceDeps["schedules"];
  private readonly logger: MetadataTestServiceDeps["logger"];
  private readonly scheduleSync: MetadataTestServiceDeps["scheduleSync"];
  private readonly reads: StaleReads;

  constructor(deps: MetadataTestServiceDeps) {
    this.prisma = deps.prisma;
    this.pool = deps.pool;
    this.engine = deps.engine;
    this.registry = deps.registry;
    this.config = deps.config;
    this.schedules = deps.schedules;
    this.logger = deps.logger;
    this.scheduleSync = deps.scheduleSync;
    this.reads = deps.reads;
    this.contracts = testContracts(deps.registry, deps.config);
  }

  async create(actor: Actor, args: z.output<Contracts["create"]>): Promise<string> {
    const { id: urn, ...input } = args.input;
    const data = storedTest(input, this.registry);
    // Its actions will run for the caller, who owns it from now on (a schedule's firings need nothing more than
    // MANAGE_TESTS, required at the resolver, and these).
    await requireActionPrivileges(this.engine, actor, actionsOf(data.definition));
    try {
      await inPrismaTransaction(this.prisma, async (tx) => {
        const onChange = data.evaluateOnChange ?? true;
        if (data.scheduleCron || onChange) await lockScheduleOwner(tx, actor.urn);
        if (data.scheduleCron) await requireScheduleRoom(tx, actor.urn, this.config.MAX_SCHEDULES_PER_USER);
        if (onChange) await requireOnChangeRoom(tx, actor.urn, this.config.MAX_ON_CHANGE_TESTS_PER_USER);
        await insertTest(tx, {
          urn,
          ...data,
          state: data.state ?? "ACTIVE",
          scheduleCron: data.scheduleCron ?? null,
          evaluateOnChange: onChange,
          createdBy: actor.urn,
          ...ownedBy(actor),
        });
        await recordAudit(tx, actor, "test.create", urn, auditDetails(data));
        // The outbox's event, in this transaction: evaluation on change runs the new test over what it selects.
        await insertTestChangeEvent(tx, { testUrn: urn, changeType: "UPSERT", actorUrn: actor.urn });
      });
    } catch (error) {
      if (isUniqueViolation(error)) throw conflict(`Test ${urn} already exists`);
      throw error;
    }
    if (data.scheduleCron) await this.syncSchedule(urn);
    return urn;
  }

  async update(actor: Actor, { urn, input }: z.output<Contracts["update"]>): Promise<string> {
    const data = storedTest(input, this.registry);
    await inPrismaTransaction(this.prisma, async (tx) => {
      // Serializes with the actor's other schedule writes (the MAX_SCHEDULES_PER_USER count), then the row.
      await lockScheduleOwner(tx, actor.urn);
      const current = await this.existing(tx, urn, true);
      // An omitted state leaves the test as it is, so DataHub's clients (which know no state) cannot re-activate it;
      // an omitted schedule likewise stays (null removes it).
      const { state, scheduleCron, evaluateOnChange, ...rest } = data;
      const cron = scheduleCron !== undefined ? scheduleCron : current.scheduleCron;
      const definitionChanged =
        normalizedDefinitionText(current.definition as unknown as ParsedDefinition) !==
        normalizedDefinitionText(data.definition as unknown as ParsedDefinition);
      // Set running again: from INACTIVE, or a suspended test set ACTIVE (which lifts its suspension).
      const activated = state === "ACTIVE" && (current.state !== "ACTIVE" || current.suspendedAt !== null);
      const turnedOn = evaluateOnChange === true && !current.evaluateOnChange;
      // Whoever sets what the test does, or starts its automatic work, owns it from then on: its definition (rules,
      // actions) or its schedule, setting it ACTIVE again, or turning evaluation on change on. The work that starts
      // then (a run over what it selects, firings, evaluations on change) acts for the owner and spends its rate
      // limits: were the owner left as it was, another user could start work as the owner (or as the system actor,
      // which nobody rate-limits). A rename or a new description changes what it does in nothing.
      const takesOver = definitionChanged || cron !== current.scheduleCron || activated || turnedOn;
      // The new owner must be able to write what the actions write; a schedule's firings need nothing more.
      if (takesOver) await requireActionPrivileges(this.engine, actor, actionsOf(data.definition));
      if (takesOver && cron !== null) {
        const ownedAlready = current.ownerUrn === actor.urn && current.scheduleCron !== null;
        if (!ownedAlready) await requireScheduleRoom(tx, actor.urn, this.config.MAX_SCHEDULES_PER_USER);
      }
      const onChangeAfter = evaluateOnChange ?? current.evaluateOnChange;
      if (takesOver && onChangeAfter && !(current.ownerUrn === actor.urn && current.evaluateOnChange)) {
        await requireOnChangeRoom(tx, actor.urn, this.config.MAX_ON_CHANGE_TESTS_PER_USER);
      }
      await updateTest(tx, urn, {
        ...rest,
        ...(state && { state }),
        ...(scheduleCron !== undefined && { scheduleCron }),
        ...(evaluateOnChange !== undefined && { evaluateOnChange }),
        ...(takesOver && { ...ownedBy(actor), suspendedAt: null, suspendedReason: null }),
      });
      // What it evaluates changed (its definition, set running again, or evaluation on change turned on): the
      // outbox's event, in this transaction, has evaluation on change run it, for its owner (the caller, above), over
      // every entity it selects.
      if (definitionChanged || activated || turnedOn) {
        await insertTestChangeEvent(tx, { testUrn: urn, changeType: "UPSERT", actorUrn: actor.urn });
      }
      await recordAudit(tx, actor, "test.update", urn, {
        ...auditDetails(data),
        ...(takesOver && current.ownerUrn !== actor.urn && { previousOwner: current.ownerUrn }),
      });
    }).catch(notFoundWhenMissing(`Test ${urn} does not exist`));
    if (data.scheduleCron !== undefined) await this.syncSchedule(urn);
    return urn;
  }

  /**
   * resumeTestSchedule: a suspended schedule runs again, for the caller, who becomes its owner (it must hold what the
   * firings need: MANAGE_TESTS and what the test's actions write, and have room under MAX_SCHEDULES_PER_USER).
   * Audited as `test.schedule.resume`. 409 when the test has no schedule or it is not suspended.
   */
  async resumeSchedule(actor: Actor, { urn }: z.output<typeof testArgs>): Promise<MetadataTest> {
    return inPrismaTransaction(this.prisma, async (tx) => {
      await lockScheduleOwner(tx, actor.urn);
      const current = await this.existing(tx, urn, true);
      if (current.suspendedAt === null) throw conflict(`Test ${urn} is not suspended`);
      // Its runs and actions will act for the caller (MANAGE_TESTS is required above).
      await requireActionPrivileges(this.engine, actor, actionsOf(current.definition as Prisma.InputJsonObject));
      if (current.ownerUrn !== actor.urn && current.scheduleCron !== null) {
        await requireScheduleRoom(tx, actor.urn, this.config.MAX_SCHEDULES_PER_USER);
      }
      if (current.ownerUrn !== actor.urn && current.evaluateOnChange) {
        await requireOnChangeRoom(tx, actor.urn, this.config.MAX_ON_CHANGE_TESTS_PER_USER);
      }
      const resumed = await updateTest(tx, urn, { ...ownedBy(actor), suspendedAt: null, suspendedReason: null });
      await recordAudit(tx, actor, "test.schedule.resume", urn, {
        previousOwner: current.ownerUrn,
        suspendedReason: current.suspendedReason,
      });
      return resumed;
    }).catch(notFoundWhenMissing(`Test ${urn} does not exist`));
  }

  async delete(actor: Actor, { urn }: z.output<typeof testArgs>): Promise<boolean> {
    let scheduled = false;
    await inPrismaTransaction(this.prisma, async (tx) => {
      const test = await this.existing(tx, urn);
      await deleteTest(tx, urn);
      await recordAudit(tx, actor, "test.delete", urn, { name: test.name });
      await insertTestChangeEvent(tx, { testUrn: urn, changeType: "DELETE", actorUrn: actor.urn });
      scheduled = test.scheduleCron !== null;
    }).catch(notFoundWhenMissing(`Test ${urn} does not exist`));
    if (scheduled) await this.syncSchedule(urn);
    return true;
  }

  /**
   * When the test's schedule fires next (epoch ms), from its BullMQ job scheduler; null when it has none (not yet
   * reconciled) or Redis cannot say: the answer never fails for it.
   */
  async nextRunAt(testUrn: string): Promise<number | null> {
    if (!this.schedules) return null;
    try {
      return (await this.schedules.nextRunsOfTests([testUrn])).get(testUrn) ?? null;
    } catch (error) {
      this.logger?.warn({ err: (error as Error).message, test: testUrn }, "could not read a test's next run");
      return null;
    }
  }

  /** What the test's schedule missed (schedule_slot); null before its first firing or sync. */
  async scheduleSlot(testUrn: string): Promise<ScheduleSlotRow | null> {
    return findScheduleSlot(this.prisma, "scheduledTest", testUrn);
  }

  /**
   * The changes of one test's pushed result for one entity, newest first: the first result, then each pass→fail and
   * fail→pass (test_result_transition, written by the evaluation workers in the push's transaction). VIEW_TESTS, as
   * testResults. The history of a deleted test stays until retention removes it. NOT_FOUND when the pair has no
   * history and nothing is stored for the entity.
   */
  async history({ start, count, ...input }: z.output<typeof testResultHistoryArgs>) {
    const { total, rows } = await replicaReads.transitionPage(
      this.reads,
      { urn: input.urn, testUrn: input.testUrn },
      start,
      count,
    );
    if (total === 0 && !(await entityExists(this.prisma, input.urn))) {
      throw notFound(`Entity ${input.urn} does not exist`);
    }
    const typeOf = (passing: boolean) => (passing ? ("SUCCESS" as const) : ("FAILURE" as const));
    const transitions: TestResultTransitionView[] = rows.map((r) => ({
      type: typeOf(r.passing),
      previousType: r.previous === null ? null : typeOf(r.previous),
      at: r.at.getTime(),
    }));
    return { start, count: transitions.length, total, transitions };
  }

  /**
   * Asks the schedule sync to make the test's BullMQ job scheduler follow its row, after the row's transaction
   * committed. A refusal from Redis leaves the answer successful: the sync makes every schedule match the rows every
   * minute, so the schedule converges.
   */
  private async syncSchedule(urn: string): Promise<void> {
    try {
      await this.scheduleSync?.request("scheduledTest", urn);
    } catch (error) {
      this.logger?.warn(
        { err: (error as Error).message, test: urn },
        "could not ask for a test's schedule to follow; the periodic schedule sync will",
      );
    }
  }

  /**
   * validateTest: whether the definition would be accepted by createTest (the same parser, limits and registry
   * checks), with each problem as a message (`<where>: <what>`); nothing is saved. VIEW_TESTS, as evaluate: it reads
   * nothing but the entity registry's names.
   */
  validate({ input }: z.output<typeof validateArgs>): { isValid: boolean; messages: string[] } {
    try {
      acceptDefinition(input.json, this.registry);
      return { isValid: true, messages: [] };
    } catch (error) {
      if (!(error instanceof TestDefinitionError)) throw error;
      return {
        isValid: false,
        messages: error.problems.map((p) => (p.path ? `${p.path}: ${p.message}` : p.message)),
      };
    }
  }

  /** Test.results: how many entities pass and fail the test now (DataHub's TestResultsSummary). */
  async resultCounts(testUrn: string): Promise<{ passingCount: number; failingCount: number }> {
    const { passing, failing } = await replicaReads.testResultCounts(this.reads, testUrn);
    return { passingCount: passing, failingCount: failing };
  }

  /**
   * Test.batchRunEvents: the test's completed runs that pushed their results (runTest, scheduled firings), newest
   * first, in [startTimeMillis, endTimeMillis) (default: the MAX_RUN_EVENTS_WINDOW_DAYS up to now), at most `limit`.
   */
  async runEvents(testUrn: string, args: unknown) {
    const window = parseArgs(runEventsArgs, args);
    const rows = await replicaReads.testRunEvents(this.reads, testUrn, window);
    return {
      batchRunEvents: rows.map((r) => ({
        timestampMillis: r.finishedAt,
        status: "COMPLETE" as const,
        result: { passingCount: r.passing, failingCount: r.failing },
      })),
    };
  }

  async get({ urn }: z.output<typeof testArgs>): Promise<MetadataTest | null> {
    return findTest(this.prisma, urn);
  }

  /** Oldest first; `query` matches name, category or description, ignoring case. */
  async list({ input: { start, count, ...input } }: z.output<typeof listTestsArgs>) {
    const query = input.query?.trim();
    const { total, rows: tests } = await replicaReads.testPage(this.reads, query || undefined, start, count);
    return { start, count: tests.length, total, tests };
  }

  /**
   * The entity's `testResults` aspect with each result's test; null when no result was ever pushed for it.
   * NOT_FOUND when nothing at all is stored for the entity.
   */
  async results(actor: Actor, { urn: entityUrn }: z.output<typeof entityArgs>): Promise<TestResultsView | null> {
    const row = await entityWithLatestAspect(this.prisma, entityUrn, TEST_RESULTS_ASPECT);
    const entityType = row.entityType;
    if (!entityType) throw notFound(`Entity ${entityUrn} does not exist`);
    if (row.value === null || row.value === undefined) return null;
    const stored = readTestResults(row.value); // values cut as answers cut them, whenever they were stored
    // VIEW_TESTS shows what failed; the values found are the entity's, shown only to a GET_ENTITY holder (cached).
    const showValues = await this.engine.has(actor, "GET_ENTITY");
    const rulesOf = (rules: FailedRule[]) => (showValues ? rules : rules.map(withoutValues));
    const urns = [...stored.passing, ...stored.failing].map((r) => r.test);
    // As the next push will: results of tests deleted, or edited away from this entity's type, are not shown.
    const tests = new Map((await testsSelectingType(this.prisma, urns, entityType)).map((t) => [t.urn, t]));
    return {
      passing: stored.passing.flatMap((r) => {
        const test = tests.get(r.test);
        return test ? [{ test, type: "SUCCESS" as const }] : [];
      }),
      failing: stored.failing.flatMap((r) => {
        const test = tests.get(r.test);
        return test ? [{ test, type: "FAILURE" as const, failedRules: rulesOf(r.failedRules ?? []) }] : [];
      }),
    };
  }

  /** The test (`lock`: its row locked for the rest of the transaction); 404 when there is none. */
  private async existing(tx: Prisma.TransactionClient, urn: string, lock = false): Promise<MetadataTest> {
    if (lock) await lockTest(tx, urn);
    const test = await findTest(tx, urn);
    if (!test) throw notFound(`Test ${urn} does not exist`);
    return test;
  }
}
