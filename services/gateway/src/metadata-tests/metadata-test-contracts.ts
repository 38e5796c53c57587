import { z } from "zod";
import { badInput, requireLength, type Config, type EntityRegistry } from "@mdp/core";
import type { MetadataTest, Prisma, TestState } from "@mdp/db";
import type { FailedRule, ParsedDefinition } from "@mdp/metadata-tests";
import { cronPatternProblem, MAX_CRON_LENGTH } from "@mdp/queues";
import { pageInput } from "../shared/paging";
import {
  newUrnField,
  parsedBy,
  rule,
  said,
  startField,
  textField,
  urnField,
  wholeNumberField,
} from "../shared/validate";
import { acceptDefinition } from "./test-definition";
import { unstorableTypes } from "./test-run.service";

/*
 * The metadata-test operations' contracts (createTest, updateTest, the reads, validateTest, Test.batchRunEvents,
 * testResultHistory), the views they answer, and what a parsed test input stores and audits.
 */

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
export const runEventsArgs = z
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
export const validateArgs = z.object({ input: z.object({ json: z.string() }) });

/** createTest's, updateTest's and the reads' arguments; the definition's entity types are the registry's. */
export const testContracts = (
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
export const testArgs = z.object({ urn: testUrn });
export const entityArgs = z.object({ urn: urnField() });
export const listTestsArgs = pageInput({ query: z.string().nullish() });

export type Contracts = ReturnType<typeof testContracts>;
export type ParsedTest = z.output<Contracts["update"]>["input"];

/** An entity's stored results, each with its test (tests deleted since are left out). */
export interface TestResultsView {
  passing: Array<{ test: MetadataTest; type: "SUCCESS" }>;
  failing: Array<{ test: MetadataTest; type: "FAILURE"; failedRules: FailedRule[] }>;
}

export const TEST_RESULTS_ASPECT = "testResults";
/** testResultHistory's page: at most this many transitions per answer (docs/limits.md). */
export const MAX_HISTORY_PAGE = 100;

export const testResultHistoryArgs = z.object({
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

/** A parsed input as stored; a schedule of a test whose results cannot be stored is refused, naming its cron. */
export function storedTest(input: ParsedTest, registry: EntityRegistry) {
  const { definitionText, definition, onTypes } = input.definition.json;
  if (input.schedule) refuseUnstorableSchedule(registry, onTypes);
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
function refuseUnstorableSchedule(registry: EntityRegistry, onTypes: readonly string[]): void {
  const unstorable = unstorableTypes(registry, onTypes);
  if (unstorable.length > 0) {
    throw badInput(
      `input.schedule.cron: a scheduled test pushes its results, and entity type ${unstorable.join(", ")} has no ` +
        `${TEST_RESULTS_ASPECT} aspect in the entity registry`,
    );
  }
}

/** The actions of a definition validate() accepted. */
export const actionsOf = (definition: Prisma.InputJsonObject) => (definition as unknown as ParsedDefinition).actions;

export function auditDetails(data: {
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
