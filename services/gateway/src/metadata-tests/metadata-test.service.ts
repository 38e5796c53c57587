import { randomUUID } from "node:crypto";
import {
  badInput,
  conflict,
  notFound,
  parseUrnField,
  requireLength,
  SCHEDULE_PRIVILEGES,
  urnOfNewId,
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
  notFoundWhenMissing,
  isUniqueViolation,
  lockScheduleOwner,
  lockTest,
  requireScheduleRoom,
  testPage,
  testsSelectingType,
  transitionPage,
  updateTest,
  type MetadataTest,
  type Prisma,
  type PrismaClient,
  type TestState,
} from "@mdp/db";
import {
  normalizedDefinitionText,
  readTestResults,
  withoutValues,
  type FailedRule,
  type ParsedDefinition,
} from "@mdp/metadata-tests";
import { cronPatternProblem, MAX_CRON_LENGTH, type ScheduleSyncRequests, type TestSchedules } from "@mdp/queues";
import { ownedBy, type Actor } from "../auth/actor";
import { recordAudit } from "../audit/audit.service";
import { pageOf } from "../graphql/paging";
import type { PolicyEngine } from "../policies/policy-engine";
import { requireActionPrivileges } from "./action-privileges";
import { acceptDefinition } from "./test-definition";
import { unstorableTypes } from "./test-run.service";

/** DataHub's UpdateTestInput; CreateTestInput adds `id`. `state` is ours: INACTIVE tests do not run unless named. */
export interface TestInput {
  name: string;
  category: string;
  description?: string | null;
  definition: { json: string };
  state?: TestState | null;
  /** ours: runs the test by itself (runTest with push) on a cron; on update, absent = unchanged and null = removed */
  schedule?: { cron: string } | null;
}

export interface CreateTestInput extends TestInput {
  id?: string | null;
}

export interface ListTestsInput {
  start?: number | null;
  count?: number | null;
  query?: string | null;
}

/** An entity's stored results, each with its test (tests deleted since are left out). */
export interface TestResultsView {
  passing: Array<{ test: MetadataTest; type: "SUCCESS" }>;
  failing: Array<{ test: MetadataTest; type: "FAILURE"; failedRules: FailedRule[] }>;
}

const TEST_RESULTS_ASPECT = "testResults";
/** testResultHistory's page: at most this many transitions per answer (docs/limits.md). */
export const MAX_HISTORY_PAGE = 100;

export interface TestResultHistoryInput {
  urn: string;
  testUrn: string;
  start?: number | null;
  count?: number | null;
}

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
  constructor(
    private readonly prisma: PrismaClient,
    private readonly engine: PolicyEngine,
    private readonly registry: EntityRegistry,
    private readonly config: Pick<Config, "URN_NAMESPACE" | "SCHEDULE_MIN_INTERVAL_SECONDS" | "MAX_SCHEDULES_PER_USER">,
    /** the tests' BullMQ job schedulers, read for their next runs (the schedule sync alone writes them) */
    private readonly schedules?: TestSchedules,
    private readonly logger?: Logger,
    /** where a write asks for its test's scheduler to follow the row */
    private readonly scheduleSync?: Pick<ScheduleSyncRequests, "request">,
  ) {}

  async create(actor: Actor, input: CreateTestInput): Promise<string> {
    await this.engine.require(actor, "MANAGE_TESTS", "create metadata tests");
    const urn = urnOfNewId("input.id", input.id, {
      namespace: this.config.URN_NAMESPACE,
      entityType: "test",
      generate: randomUUID,
    });
    const data = this.validate(input);
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
          createdBy: actor.urn,
          ...ownedBy(actor),
        });
        await recordAudit(tx, actor, "test.create", urn, auditDetails(data));
      });
    } catch (error) {
      if (isUniqueViolation(error)) throw conflict(`Test ${urn} already exists`);
      throw error;
    }
    if (data.scheduleCron) await this.syncSchedule(urn);
    return urn;
  }

  async update(actor: Actor, urn: string, input: TestInput): Promise<string> {
    await this.engine.require(actor, "MANAGE_TESTS", "update metadata tests");
    parseUrnField("urn", urn, "test");
    const data = this.validate(input);
    await inPrismaTransaction(this.prisma, async (tx) => {
      // Serializes with the actor's other schedule writes (the MAX_SCHEDULES_PER_USER count), then the row.
      await lockScheduleOwner(tx, actor.urn);
      const current = await this.existing(tx, urn, true);
      // An omitted state leaves the test as it is, so DataHub's clients (which know no state) cannot re-activate it;
      // an omitted schedule likewise stays (null removes it).
      const { state, scheduleCron, ...rest } = data;
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
        ...(takesOver && { ...ownedBy(actor), suspendedAt: null, suspendedReason: null }),
      });
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
  async resumeSchedule(actor: Actor, urn: string): Promise<MetadataTest> {
    await this.engine.require(actor, SCHEDULE_PRIVILEGES.SCHEDULED_TEST, "resume scheduled tests");
    parseUrnField("urn", urn, "test");
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

  async delete(actor: Actor, urn: string): Promise<boolean> {
    await this.engine.require(actor, "MANAGE_TESTS", "delete metadata tests");
    parseUrnField("urn", urn, "test");
    let scheduled = false;
    await inPrismaTransaction(this.prisma, async (tx) => {
      const test = await this.existing(tx, urn);
      await deleteTest(tx, urn);
      await recordAudit(tx, actor, "test.delete", urn, { name: test.name });
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
  async history(actor: Actor, input: TestResultHistoryInput) {
    await this.engine.require(actor, "VIEW_TESTS", "view metadata test results");
    parseUrnField("urn", input.urn);
    parseUrnField("testUrn", input.testUrn, "test");
    const start = input.start ?? 0;
    const count = input.count ?? 20;
    if (!Number.isInteger(start) || start < 0) throw badInput("start must be 0 or more");
    if (!Number.isInteger(count) || count < 0 || count > MAX_HISTORY_PAGE) {
      throw badInput(`count must be between 0 and ${MAX_HISTORY_PAGE}`);
    }
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

  async get(actor: Actor, urn: string): Promise<MetadataTest | null> {
    await this.engine.require(actor, "VIEW_TESTS", "view metadata tests");
    parseUrnField("urn", urn, "test");
    return findTest(this.prisma, urn);
  }

  /** Oldest first; `query` matches name, category or description, ignoring case. */
  async list(actor: Actor, input: ListTestsInput) {
    await this.engine.require(actor, "VIEW_TESTS", "list metadata tests");
    const { start, count } = pageOf(input);
    const query = input.query?.trim();
    const { total, rows: tests } = await testPage(this.prisma, query || undefined, start, count);
    return { start, count: tests.length, total, tests };
  }

  /**
   * The entity's `testResults` aspect with each result's test; null when no result was ever pushed for it.
   * NOT_FOUND when nothing at all is stored for the entity.
   */
  async results(actor: Actor, entityUrn: string): Promise<TestResultsView | null> {
    await this.engine.require(actor, "VIEW_TESTS", "view metadata test results");
    parseUrnField("urn", entityUrn);
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

  private validate(input: TestInput) {
    const name = input.name.trim();
    requireLength("input.name", name, { min: 1, max: 256 });
    const category = input.category.trim();
    requireLength("input.category", category, { min: 1, max: 256 });
    requireLength("input.description", input.description ?? "", { max: 2000 });
    const accepted = acceptDefinition(input.definition.json, this.registry);
    return {
      name,
      category,
      description: input.description ?? null,
      definitionText: accepted.definitionText,
      definition: accepted.definition as unknown as Prisma.InputJsonObject,
      onTypes: accepted.onTypes,
      state: input.state ?? undefined,
      scheduleCron: this.validateSchedule(input.schedule, accepted.onTypes),
    };
  }

  /** The schedule's cron (null: none; undefined: not given), refused with a 400 naming input.schedule.cron. */
  private validateSchedule(schedule: TestInput["schedule"], onTypes: readonly string[]): string | null | undefined {
    if (schedule === undefined || schedule === null) return schedule;
    const cron = schedule.cron.trim();
    const field = "input.schedule.cron";
    requireLength(field, cron, { min: 1, max: MAX_CRON_LENGTH });
    const problem = cronPatternProblem(cron, this.config.SCHEDULE_MIN_INTERVAL_SECONDS);
    if (problem) throw badInput(`${field}: ${problem}`);
    // A scheduled run pushes its results: refused up front for types that cannot store them, as runTest refuses.
    const unstorable = unstorableTypes(this.registry, onTypes);
    if (unstorable.length > 0) {
      throw badInput(
        `${field}: a scheduled test pushes its results, and entity type ${unstorable.join(", ")} has no ` +
          `${TEST_RESULTS_ASPECT} aspect in the entity registry`,
      );
    }
    return cron;
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
}) {
  return {
    name: data.name,
    category: data.category,
    onTypes: data.onTypes,
    ...(data.state && { state: data.state }),
    ...(data.scheduleCron !== undefined && { schedule: data.scheduleCron && { cron: data.scheduleCron } }),
  };
}
