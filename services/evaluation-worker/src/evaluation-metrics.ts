import { Counter, Gauge, Histogram, Registry } from "prom-client";
import type { EntityEvaluation } from "@mdp/metadata-tests";
import { tallyOf, type Tally } from "./evaluation-thread";

/**
 * What the evaluation worker adds to its /metrics (served with the queue's metrics, @mdp/queues' worker monitor):
 * how evaluate requests end and what their tests found. One registry per process, as the handler is; labels take fixed
 * values only.
 */
export const evaluationRegistry = new Registry();

const requests = new Counter({
  name: "mdp_evaluation_requests_total",
  help: "Evaluate and batchEvaluate requests answered, by outcome (evaluated, refused)",
  labelNames: ["outcome"] as const,
  registers: [evaluationRegistry],
});
const entities = new Counter({
  name: "mdp_entity_evaluations_total",
  help: "Entities evaluated (by evaluate, batchEvaluate and runTest)",
  registers: [evaluationRegistry],
});
const testResults = new Counter({
  name: "mdp_test_results_total",
  help: "Test results of evaluated entities, by result (passing, failing, not_applicable)",
  labelNames: ["result"] as const,
  registers: [evaluationRegistry],
});
for (const outcome of ["evaluated", "refused"]) requests.inc({ outcome }, 0);
for (const result of ["passing", "failing", "not_applicable"]) testResults.inc({ result }, 0);

/** One evaluate request's end: refused (nothing evaluated), or its entities' evaluations. */
export function countRequest(refused: boolean, tally: Tally): void {
  requests.inc({ outcome: refused ? "refused" : "evaluated" });
  countTally(tally);
}

/** Entities evaluated, and what their tests found. */
export function countEvaluations(evaluations: readonly EntityEvaluation[]): void {
  countTally(tallyOf(evaluations));
}

/** Entities evaluated, and what their tests found, as counted where they were evaluated (an evaluation thread). */
export function countTally(tally: Tally): void {
  if (tally.entities === 0) return;
  entities.inc(tally.entities);
  testResults.inc({ result: "passing" }, tally.passing);
  testResults.inc({ result: "failing" }, tally.failing);
  testResults.inc({ result: "not_applicable" }, tally.notApplicable);
}

const onChangeEvents = new Counter({
  name: "mdp_on_change_events_total",
  help: "Aspect changes read by evaluation on change (pushed testResults and test actions' writes are passed over)",
  registers: [evaluationRegistry],
});
const onChangeEntities = new Counter({
  name: "mdp_on_change_entities_total",
  help: "Entities evaluated on change (each changed entity once per pass, however many of its changes it read)",
  registers: [evaluationRegistry],
});
const onChangeLag = new Histogram({
  name: "mdp_on_change_lag_seconds",
  help: "From an event's commit to the end of the pass that evaluated it (its pushed result committed)",
  buckets: [0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 300],
  registers: [evaluationRegistry],
});

/** One pass of evaluation on change: its events, the entities it evaluated, and how late each event was handled. */
export function countOnChange(
  pass: { events: number; entities: number },
  events: ReadonlyArray<{ createdAt: number }>,
): void {
  onChangeEvents.inc(pass.events);
  onChangeEntities.inc(pass.entities);
  const now = Date.now();
  for (const e of events) onChangeLag.observe(Math.max(0, now - e.createdAt) / 1000);
}

const onChangePartitions = new Gauge({
  name: "mdp_on_change_partitions_held",
  help: "Partitions of the change stream this worker holds (ON_CHANGE_PARTITIONS shared by the live workers)",
  registers: [evaluationRegistry],
});
const onChangeCarried = new Counter({
  name: "mdp_on_change_carried_total",
  help: "Entities whose evaluation for an owner carried over past its share of a pass (ON_CHANGE_OWNER_BUDGET_MS)",
  registers: [evaluationRegistry],
});

/** The partitions this worker holds after a claim round. */
export function setPartitionsHeld(count: number): void {
  onChangePartitions.set(count);
}

/** Entities carried over to owners' backlogs by a pass. */
export function countCarried(count: number): void {
  if (count > 0) onChangeCarried.inc(count);
}
