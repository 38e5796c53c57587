import { z } from "zod";
import {
  badInput,
  conflict,
  notFound,
  requireLength,
  SCHEDULE_PRIVILEGES,
  type Config,
  type EntityRegistry,
  type Logger,
} from "@mdp/core";
import {
  deleteTest,
  entityExists,
  entityWithLatestAspect,
  findTest,
  inPrismaTransaction,
  insertTest,
  insertTestChangeEvent,
  notFoundWhenMissing,
  isUniqueViolation,
  lockScheduleOwner,
  lockTest,
  requireScheduleRoom,
  testPage,
  testResultCounts,
  testRunEvents,
  testsSelectingType,
  transitionPage,
  updateTest,
  type MetadataTest,
  type Prisma,
  type PrismaClient,
  type Queryable,
  type TestState,
} from "@mdp/db";
import {
  normalizedDefinitionText,
  readTestResults,
  TestDefinitionError,
  withoutValues,
  type FailedRule,
  type ParsedDefinition,
} from "@mdp/metadata-tests";
import { cronPatternProblem, MAX_CRON_LENGTH, type ScheduleSyncRequests, type TestSchedules } from "@mdp/queues";
import { ownedBy, type Actor } from "../auth/actor";
import { recordAudit } from "../audit/audit.service";
import { pageInput } from "../graphql/paging";
import {
  newUrnField,
  parseArgs,
  parsedBy,
  rule,
  said,
  startField,
  textField,
  urnField,
  wholeNumberField,
} from "../http/validate";
import type { PolicyEngine } from "../policies/policy-engine";
import { requireActionPrivileges } from "./action-privileges";
import { acceptDefinition } from "./test-definition";
import { unstorableTypes } from "./test-run.service";

/**
 * DataHub's UpdateTestInput, parsed: the definition accepted (acceptDefinition), the schedule's cron checked (on
 * update, absent = unchanged and null = removed). `state` is ours: INACTIVE tests do not run unless named.
 */
const testInput = (registry: EntityRegistry, minIntervalSeconds: number) => ({
  name: textField({ min: 1, max: 256, trim: true }),
  category: textField({ min: 1, max: 256, trim: true }),
  description: textField({ max: 2000 })
    .nullish()
    .transform((description) => description ?? null),
  definition: z.object({
    json: z.string().transform(parsedBy((_at, text: string) => acceptDefinition(text, registry))),
  }),
  state: z
    .enum(["ACTIVE", "INACTIVE"])
    .nullish()
    .transform((state) => state ?? undefined),
  /** ours: runs the test by itself (runTest with push) on a cron */
  schedule: z
    .object({
      cron: z
        .string()
        .trim()
        .refine(
          ...rule((at, cron: string) => {
            requireLength(at, cron, { min: 1, max: MAX_CRON_LENGTH });
            const problem = cronPatternProblem(cron, minIntervalSeconds);
            if (problem) throw badInput(`${at}: ${problem}`);
          }),
        ),
    })
    .nullish(),
  /**
   * ours: whether a change of an entity it selects re-evaluates it and pushes the result by itself, and an edit of
   * its definition re-evaluates every entity it selects (default on; absent on update: unchanged)
   */
  evaluateOnChange: z
    .boolean()
    .nullish()
    .transform((on) => on ?? undefined),
});

const testUrn = urnField("test");

/** Test.batchRunEvents' page: at most this many events per answer, this many by default (docs/limits.md). */
export const MAX_RUN_EVENTS = 100;
export const DEFAULT_RUN_EVENTS = 20;
/** Test.batchRunEvents' window: at most this long; without startTimeMillis, this long before endTimeMillis. */
export const MAX_RUN_EVENTS_WINDOW_DAYS = 90;
const DAY_MS = 86_400_000;

const millis = (name: string) =>
  z
    .number()
    .int(said((at) => `${at} must be a whole number of epoch milliseconds`))
    .min(
      0,
      said((at) => `${at} must be 0 or more`),
    )
    .nullish()
    .transform((value) => value ?? undefined)
    .describe(name);
const runEventsArgs = z
  .object({
    startTimeMillis: millis("startTimeMillis"),
    endTimeMillis: millis("endTimeMillis"),
    limit: wholeNumberField(1, MAX_RUN_EVENTS, DEFAULT_RUN_EVENTS),
  })
  .transform((args, ctx) => {
    const to = args.endTimeMillis ?? Date.now() + 1;
    const from = args.startTimeMillis ?? Math.max(0, to - MAX_RUN_EVENTS_WINDOW_DAYS * DAY_MS);
    if (from > to) {
      ctx.addIssue({ code: "custom", message: "startTimeMillis must not be after endTimeMillis", path: [] });
      return z.NEVER;
    }
    if (to - from > MAX_RUN_EVENTS_WINDOW_DAYS * DAY_MS) {
      ctx.addIssue({
        code: "custom",
        message:
          `startTimeMillis to endTimeMillis spans ${Math.ceil((to - from) / DAY_MS)} days, more than the limit of ` +
          `${MAX_RUN_EVENTS_WINDOW_DAYS}`,
        path: [],
      });
      return z.NEVER;
    }
    return { from, to, limit: args.limit };
  });

/** validateTest's argument: DataHub's TestDefinitionInput. */
const validateArgs = z.object({ input: z.object({ json: z.string() }) });

/** createTest's, updateTest's and the reads' arguments; the definition's entity types are the registry's. */
const testContracts = (
  registry: EntityRegistry,
  config: Pick<Config, "URN_NAMESPACE" | "SCHEDULE_MIN_INTERVAL_SECONDS">,
) => {
  const input = testInput(registry, config.SCHEDULE_MIN_INTERVAL_SECONDS);
  return {
    create: z.object({
      input: z.object({
        // Parsed into the test's urn.
        id: newUrnField(config.URN_NAMESPACE, "test"),
        ...input,
      }),
    }),
    update: z.object({ urn: testUrn, input: z.object(input) }),
  };
};
const testArgs = z.object({ urn: testUrn });
const entityArgs = z.object({ urn: urnField() });
const listTestsArgs = pageInput({ query: z.string().nullish() });

type Contracts = ReturnType<typeof testContracts>;
type ParsedTest = z.output<Contracts["update"]>["input"];

/** An entity's stored results, each with its test (tests deleted since are left out). */
export interface TestResultsView {
  passing: Array<{ test: MetadataTest; type: "SUCCESS" }>;
  failing: Array<{ test: MetadataTest; type: "FAILURE"; failedRules: FailedRule[] }>;
}

const TEST_RESULTS_ASPECT = "testResults";
/** testResultHistory's page: at most this many transitions per answer (docs/limits.md). */
export const MAX_HISTORY_PAGE = 100;

const testResultHistoryArgs = z.object({
  urn: urnField(),
  testUrn,
  start: startField(),
  count: wholeNumberField(0, MAX_HISTORY_PAGE, 20),
});

/** One change of a test's result for an entity: newest first in testResultHistory. */
export interface TestResultTransitionView {
  type: "SUCCESS" | "FAILURE";
  /** null: the first result recorded for the pair */
  previousType: "SUCCESS" | "FAILURE" | null;
  at: number;
}

/**
 * Metadata-test definitions (docs/api.md "Metadata tests"): changes need MANAGE_TESTS and are audited in
 * their own transaction; reads need VIEW_TESTS. There is no cache of tests anywhere: the evaluation worker reads them
 * from PostgreSQL for every evaluation, so a change here is what the very next evaluation uses.
 */
export class MetadataTestService {
  /** createTest's and updateTest's contracts, which read the registry and the schedule's minimum interval */
  private readonly contracts: Contracts;

  constructor(
    private readonly prisma: PrismaClient,
    /** plain pg, for the reads of Test.results and Test.batchRunEvents */
    private readonly pool: Queryable,
    private readonly engine: PolicyEngine,
    private readonly registry: EntityRegistry,
    private readonly config: Pick<Config, "URN_NAMESPACE" | "SCHEDULE_MIN_INTERVAL_SECONDS" | "MAX_SCHEDULES_PER_USER">,
    /** the tests' BullMQ job schedulers, read for their next runs (the schedule sync alone writes them) */
    private readonly schedules?: TestSchedules,
    private readonly logger?: Logger,
    /** where a write asks for its test's scheduler to follow the row */
    private readonly scheduleSync?: Pick<ScheduleSyncRequests, "request">,
  ) {
    this.contracts = testContracts(registry, config);
  }

  async create(actor: Actor, args: unknown): Promise<string> {
    await this.engine.require(actor, "MANAGE_TESTS", "create metadata tests");
    const { id: urn, ...input } = parseArgs(this.contracts.create, args).input;
    const data = this.stored(input);
    // Its actions will run for the caller, who owns it from now on (a schedule's firings need nothing more than
    // MANAGE_TESTS, required above, and these).
    await requireActionPrivileges(this.engine, actor, actionsOf(data.definition));
    try {
      await inPrismaTransaction(this.prisma, async (tx) => {
        if (data.scheduleCron) {
          await lockScheduleOwner(tx, actor.urn);
          await requireScheduleRoom(tx, actor.urn, this.config.MAX_SCHEDULES_PER_USER);
        }
        await insertTest(tx, {
          urn,
          ...data,
          state: data.state ?? "ACTIVE",
          scheduleCron: data.scheduleCron ?? null,
          evaluateOnChange: data.evaluateOnChange ?? true,
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

  async update(actor: Actor, args: unknown): Promise<string> {
    await this.engine.require(actor, "MANAGE_TESTS", "update metadata tests");
    const { urn, input } = parseArgs(this.contracts.update, args);
    const data = this.stored(input);
    await inPrismaTransaction(this.prisma, async (tx) => {
      // Serializes with the actor's other schedule writes (the MAX_SCHEDULES_PER_USER count), then the row.
      await lockScheduleOwner(tx, actor.urn);
      const current = await this.existing(tx, urn, true);
      // An omitted state leaves the test as it is, so DataHub's clients (which know no state) cannot re-activate it;
      // an omitted schedule likewise stays (null removes it).
      const { state, scheduleCron, evaluateOnChange, ...rest } = data;
      const cron = scheduleCron !== undefined ? scheduleCron : current.scheduleCron;
      // Whoever sets what the test does owns it from then on: its definition (rules, actions) or its schedule, or
      // setting a scheduled test running again. A rename or a new description changes what it does in nothing.
      const takesOver =
        normalizedDefinitionText(current.definition as unknown as ParsedDefinition) !==
          normalizedDefinitionText(data.definition as unknown as ParsedDefinition) ||
        cron !== current.scheduleCron ||
        (cron !== null && state === "ACTIVE" && current.state !== "ACTIVE");
      // The new owner must be able to write what the actions write; a schedule's firings need nothing more.
      if (takesOver) await requireActionPrivileges(this.engine, actor, actionsOf(data.definition));
      if (takesOver && cron !== null) {
        const ownedAlready = current.ownerUrn === actor.urn && current.scheduleCron !== null;
        if (!ownedAlready) await requireScheduleRoom(tx, actor.urn, this.config.MAX_SCHEDULES_PER_USER);
      }
      await updateTest(tx, urn, {
        ...rest,
        ...(state && { state }),
        ...(scheduleCron !== undefined && { scheduleCron }),
        ...(evaluateOnChange !== undefined && { evaluateOnChange }),
        ...(takesOver && { ...ownedBy(actor), suspendedAt: null, suspendedReason: null }),
      });
      // What it evaluates changed (its definition, set running again, or evaluation on change turned on): the
      // outbox's event, in this transaction, has evaluation on change run it over every entity it selects.
      const definitionChanged =
        normalizedDefinitionText(current.definition as unknown as ParsedDefinition) !==
        normalizedDefinitionText(data.definition as unknown as ParsedDefinition);
      const activated = state === "ACTIVE" && current.state !== "ACTIVE";
      const turnedOn = evaluateOnChange === true && !current.evaluateOnChange;
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
  async resumeSchedule(actor: Actor, args: unknown): Promise<MetadataTest> {
    await this.engine.require(actor, SCHEDULE_PRIVILEGES.SCHEDULED_TEST, "resume scheduled tests");
    const { urn } = parseArgs(testArgs, args);
    return inPrismaTransaction(this.prisma, async (tx) => {
      await lockScheduleOwner(tx, actor.urn);
      const current = await this.existing(tx, urn, true);
      if (current.suspendedAt === null) throw conflict(`Test ${urn} is not suspended`);
      // Its runs and actions will act for the caller (MANAGE_TESTS is required above).
      await requireActionPrivileges(this.engine, actor, actionsOf(current.definition as Prisma.InputJsonObject));
      if (current.ownerUrn !== actor.urn && current.scheduleCron !== null) {
        await requireScheduleRoom(tx, actor.urn, this.config.MAX_SCHEDULES_PER_USER);
      }
      const resumed = await updateTest(tx, urn, { ...ownedBy(actor), suspendedAt: null, suspendedReason: null });
      await recordAudit(tx, actor, "test.schedule.resume", urn, {
        previousOwner: current.ownerUrn,
        suspendedReason: current.suspendedReason,
      });
      return resumed;
    }).catch(notFoundWhenMissing(`Test ${urn} does not exist`));
  }

  async delete(actor: Actor, args: unknown): Promise<boolean> {
    await this.engine.require(actor, "MANAGE_TESTS", "delete metadata tests");
    const { urn } = parseArgs(testArgs, args);
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

  /**
   * The changes of one test's pushed result for one entity, newest first: the first result, then each pass→fail and
   * fail→pass (test_result_transition, written by the evaluation workers in the push's transaction). VIEW_TESTS, as
   * testResults. The history of a deleted test stays until retention removes it. NOT_FOUND when the pair has no
   * history and nothing is stored for the entity.
   */
  async history(actor: Actor, args: unknown) {
    await this.engine.require(actor, "VIEW_TESTS", "view metadata test results");
    const { start, count, ...input } = parseArgs(testResultHistoryArgs, args);
    const { total, rows } = await transitionPage(this.prisma, { urn: input.urn, testUrn: input.testUrn }, start, count);
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
  async validate(actor: Actor, args: unknown): Promise<{ isValid: boolean; messages: string[] }> {
    await this.engine.require(actor, "VIEW_TESTS", "validate metadata tests");
    const { input } = parseArgs(validateArgs, args);
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
    const { passing, failing } = await testResultCounts(this.pool, testUrn);
    return { passingCount: passing, failingCount: failing };
  }

  /**
   * Test.batchRunEvents: the test's completed runs that pushed their results (runTest, scheduled firings), newest
   * first, in [startTimeMillis, endTimeMillis) (default: the MAX_RUN_EVENTS_WINDOW_DAYS up to now), at most `limit`.
   */
  async runEvents(testUrn: string, args: unknown) {
    const window = parseArgs(runEventsArgs, args);
    const rows = await testRunEvents(this.pool, testUrn, window);
    return {
      batchRunEvents: rows.map((r) => ({
        timestampMillis: r.finishedAt,
        status: "COMPLETE" as const,
        result: { passingCount: r.passing, failingCount: r.failing },
      })),
    };
  }

  async get(actor: Actor, args: unknown): Promise<MetadataTest | null> {
    await this.engine.require(actor, "VIEW_TESTS", "view metadata tests");
    const { urn } = parseArgs(testArgs, args);
    return findTest(this.prisma, urn);
  }

  /** Oldest first; `query` matches name, category or description, ignoring case. */
  async list(actor: Actor, args: unknown) {
    await this.engine.require(actor, "VIEW_TESTS", "list metadata tests");
    const { start, count, ...input } = parseArgs(listTestsArgs, args).input;
    const query = input.query?.trim();
    const { total, rows: tests } = await testPage(this.prisma, query || undefined, start, count);
    return { start, count: tests.length, total, tests };
  }

  /**
   * The entity's `testResults` aspect with each result's test; null when no result was ever pushed for it.
   * NOT_FOUND when nothing at all is stored for the entity.
   */
  async results(actor: Actor, args: unknown): Promise<TestResultsView | null> {
    await this.engine.require(actor, "VIEW_TESTS", "view metadata test results");
    const { urn: entityUrn } = parseArgs(entityArgs, args);
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

  /** A parsed input as stored; a schedule of a test whose results cannot be stored is refused, naming its cron. */
  private stored(input: ParsedTest) {
    const { definitionText, definition, onTypes } = input.definition.json;
    if (input.schedule) this.refuseUnstorableSchedule(onTypes);
    return {
      name: input.name,
      category: input.category,
      description: input.description,
      definitionText,
      definition: definition as unknown as Prisma.InputJsonObject,
      onTypes,
      state: input.state,
      scheduleCron: input.schedule === undefined || input.schedule === null ? input.schedule : input.schedule.cron,
      evaluateOnChange: input.evaluateOnChange,
    };
  }

  /** A scheduled run pushes its results: refused up front for types that cannot store them, as runTest refuses. */
  private refuseUnstorableSchedule(onTypes: readonly string[]): void {
    const unstorable = unstorableTypes(this.registry, onTypes);
    if (unstorable.length > 0) {
      throw badInput(
        `input.schedule.cron: a scheduled test pushes its results, and entity type ${unstorable.join(", ")} has no ` +
          `${TEST_RESULTS_ASPECT} aspect in the entity registry`,
      );
    }
  }

  /** The test (`lock`: its row locked for the rest of the transaction); 404 when there is none. */
  private async existing(tx: Prisma.TransactionClient, urn: string, lock = false): Promise<MetadataTest> {
    if (lock) await lockTest(tx, urn);
    const test = await findTest(tx, urn);
    if (!test) throw notFound(`Test ${urn} does not exist`);
    return test;
  }
}

/** The actions of a definition validate() accepted. */
const actionsOf = (definition: Prisma.InputJsonObject) => (definition as unknown as ParsedDefinition).actions;

function auditDetails(data: {
  name: string;
  category: string;
  onTypes: string[];
  state?: TestState;
  scheduleCron?: string | null;
  evaluateOnChange?: boolean;
}) {
  return {
    name: data.name,
    category: data.category,
    onTypes: data.onTypes,
    ...(data.state && { state: data.state }),
    ...(data.scheduleCron !== undefined && { schedule: data.scheduleCron && { cron: data.scheduleCron } }),
    ...(data.evaluateOnChange !== undefined && { evaluateOnChange: data.evaluateOnChange }),
  };
}
