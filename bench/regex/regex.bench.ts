/**
 * bench/regex: what regex_match costs an evaluation, in process through @mdp/metadata-tests' public entry. A test of
 * regex_match rules typical of metadata tests is evaluated on one dataset; the floor is the same test with each rule
 * written without a regex (starts_with, contains_str, equals: the same outcomes), evaluated in the same rounds, so
 * the ratio is what the regex engine leaves of the evaluator's throughput. Also measured, each against the same
 * floor: saving a definition whose patterns are new (each compiled once: the save-time check), and a pattern that
 * defeats RE2's DFA over a 16,384-character value (the subject limit). Rounds alternate the order of each pair.
 * Reported, not judged: the engine is chosen for its linear time, not its speed.
 */
import { performance } from "node:perf_hooks";
import { evaluateTest, parseTestDefinition, type EntitySnapshot } from "@mdp/metadata-tests";
import { printReport, type Row } from "../support/report";

const ROUNDS = 7;
const ROUND_MS = 400;

const ENTITY: EntitySnapshot = {
  urn: "urn:li:dataset:(urn:li:dataPlatform:hive,warehouse.orders_daily,PROD)",
  entityType: "dataset",
  aspects: {
    datasetProperties: { name: "orders_daily", description: "Daily orders, one row per order line" },
    globalTags: { tags: [{ tag: "urn:li:tag:pii" }, { tag: "urn:li:tag:tier-1" }] },
    ownership: { owners: [{ owner: "urn:li:corpuser:jdoe", type: "TECHNICAL_OWNER" }] },
  },
};

/** [regex rule, the same rule without a regex]: both hold on ENTITY, or both fail. */
const RULES: Array<[Record<string, unknown>, Record<string, unknown>]> = [
  [
    { property: "urn", operator: "regex_match", value: "^urn:li:dataset:\\(urn:li:dataPlatform:(hive|kafka)," },
    { property: "urn", operator: "starts_with", values: ["urn:li:dataset:(urn:li:dataPlatform:hive,"] },
  ],
  [
    { property: "datasetProperties.name", operator: "regex_match", value: "^[a-z][a-z0-9_]*$" },
    { property: "datasetProperties.name", operator: "contains_str", value: "orders" },
  ],
  [
    { property: "globalTags.tags.tag", operator: "regex_match", value: "^urn:li:tag:tier-[0-9]$" },
    { property: "globalTags.tags.tag", operator: "equals", value: "urn:li:tag:tier-1" },
  ],
  [
    { property: "ownership.owners.owner", operator: "regex_match", value: "(?i)^urn:li:corpuser:[a-z.]+$" },
    { property: "ownership.owners.owner", operator: "starts_with", value: "urn:li:corpuser:" },
  ],
  [
    { property: "datasetProperties.description", operator: "regex_match", value: "\\border line\\b" },
    { property: "datasetProperties.description", operator: "contains_str", value: "order line" },
  ],
];

const definition = (rules: Array<Record<string, unknown>>) => JSON.stringify({ on: { types: ["dataset"] }, rules });
const REGEX_TEST = parseTestDefinition(definition(RULES.map(([regex]) => regex)));
const PLAIN_TEST = parseTestDefinition(definition(RULES.map(([, plain]) => plain)));

const HOSTILE_VALUE = `${"ab".repeat(8_191)}ac`;
const hostileEntity = (description: string): EntitySnapshot => ({
  ...ENTITY,
  aspects: { ...ENTITY.aspects, datasetProperties: { name: "orders_daily", description } },
});
const HOSTILE_TEST = parseTestDefinition(
  definition([{ property: "datasetProperties.description", operator: "regex_match", value: "(a|b)*a(a|b){20}c" }]),
);
const HOSTILE_FLOOR = parseTestDefinition(
  definition([{ property: "datasetProperties.description", operator: "contains_str", value: "abc" }]),
);

let fresh = 0;
/** A definition of RULES' regex patterns made new (never compiled before), or the same without regexes. */
const newPatterns = () =>
  definition(RULES.map(([regex]) => ({ ...regex, value: `${String(regex.value)}|never${fresh++}` })));
const PLAIN_TEXT = definition(RULES.map(([, plain]) => plain));

/** Calls of `work` per second, run for ROUND_MS. */
function rate(work: () => void): number {
  let calls = 0;
  const started = performance.now();
  let elapsed = 0;
  do {
    for (let i = 0; i < 50; i++) work();
    calls += 50;
    elapsed = performance.now() - started;
  } while (elapsed < ROUND_MS);
  return calls / (elapsed / 1000);
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** Median rates of `mine` and `floor` over paired rounds, and each round's ratio. */
function pairs(mine: () => void, floor: () => void): { mine: number; floor: number; ratios: number[] } {
  rate(mine);
  rate(floor);
  const mines: number[] = [];
  const floors: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    if (round % 2 === 0) floors.push(rate(floor));
    mines.push(rate(mine));
    if (round % 2 === 1) floors.push(rate(floor));
  }
  return { mine: median(mines), floor: median(floors), ratios: mines.map((m, i) => m / floors[i]!) };
}

export function benchRegex(): Promise<void> {
  const perCall = (perSecond: number) =>
    perSecond > 1_000 ? `${(1e6 / perSecond).toFixed(1)} µs` : `${(1e3 / perSecond).toFixed(2)} ms`;
  const measured = [
    {
      name: "evaluate 5 regex_match rules on one dataset",
      ...pairs(
        () => evaluateTest(REGEX_TEST, ENTITY),
        () => evaluateTest(PLAIN_TEST, ENTITY),
      ),
    },
    {
      name: "save a definition of 5 new patterns",
      ...pairs(
        () => parseTestDefinition(newPatterns()),
        () => parseTestDefinition(PLAIN_TEXT),
      ),
    },
    {
      name: "a DFA-defeating pattern, 16,384 characters",
      ...pairs(
        () => evaluateTest(HOSTILE_TEST, hostileEntity(HOSTILE_VALUE)),
        () => evaluateTest(HOSTILE_FLOOR, hostileEntity(HOSTILE_VALUE)),
      ),
    },
  ];
  const rows: Row[] = measured.map(({ name, mine, ratios }) => ({
    name,
    value: `${perCall(mine)} each`,
    ratio: median(ratios),
    spread: { min: Math.min(...ratios), max: Math.max(...ratios) },
    target: "-",
    met: true,
  }));
  printReport(
    "bench/regex",
    `the same work without regexes: ${measured.map(({ floor }) => `${perCall(floor)}`).join(", ")} each`,
    rows,
  );
  process.stdout.write(`  ratio: throughput ÷ the floor's, median over ${ROUNDS} rounds (lowest–highest round)\n`);
  return Promise.resolve();
}
