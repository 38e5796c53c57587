/**
 * The goals of bench/cost: an operation's CPU per request in one process against its floor's (the same stack doing the
 * same core work, measured in the same run), as a ratio with its limit, MET or NOT MET.
 */
import type { Cost } from "./meter";

export interface Goal {
  /** the operation, as its window names it */
  operation: string;
  /** the process whose CPU is compared (gateway, evaluation worker, PostgreSQL) */
  process: string;
  /** what the floor is, in a few words */
  floor: string;
  /** CPU seconds per unit: the operation's and its floor's */
  measured: number;
  floorCpu: number;
  /** the ratio it must not exceed */
  limit: number;
  /**
   * A reference, not a goal: the operation against a floor that also does what the product must keep (its guarantees,
   * its protections), printed in a table of its own and not counted. It shows how much of a goal's distance is those.
   */
  reference?: true;
}

/** A goal from two windows: `process` of the operation's against `floorProcess` of the floor's. */
export function goalOf(
  operation: Cost,
  process: string,
  floor: Cost,
  floorProcess: string,
  what: string,
  limit: number,
): Goal {
  return {
    operation: operation.operation,
    process,
    floor: what,
    measured: operation.cpu[process] ?? NaN,
    floorCpu: floor.cpu[floorProcess] ?? NaN,
    limit,
  };
}

/** `goal` as a reference (see Goal.reference): its limit is not judged. */
export const asReference = (goal: Goal): Goal => ({ ...goal, reference: true });

export const ratioOf = (goal: Goal) => goal.measured / goal.floorCpu;
export const met = (goal: Goal) => ratioOf(goal) <= goal.limit;

const us = (seconds: number) => (seconds * 1e6).toFixed(seconds * 1e6 >= 100 ? 0 : 1);

/** The goals as a markdown table, one row each, and how many are met; then the references, if any. */
export function printGoals(all: Goal[], write: (text: string) => void = (t) => process.stdout.write(t)): void {
  const goals = all.filter((g) => !g.reference);
  const references = all.filter((g) => g.reference);
  const rows = goals.map(
    (g) =>
      `| ${g.operation} | ${g.process} | ${us(g.measured)} | ${g.floor}: ${us(g.floorCpu)} | ` +
      `${ratioOf(g).toFixed(2)}× | ≤ ${g.limit}× | ${met(g) ? "MET" : "NOT MET"} |`,
  );
  write(
    `\nCPU per request against its floor (µs; the same run)\n\n` +
      `| operation | process | CPU | floor | ratio | goal | |\n| --- | --- | ---: | --- | ---: | ---: | --- |\n` +
      rows.join("\n") +
      `\n\n${goals.filter(met).length} of ${goals.length} goals met\n`,
  );
  if (references.length === 0) return;
  write(
    `\nAgainst floors that also do what the product keeps (references, not goals)\n\n` +
      `| operation | process | CPU | floor | ratio |\n| --- | --- | ---: | --- | ---: |\n` +
      references
        .map(
          (g) =>
            `| ${g.operation} | ${g.process} | ${us(g.measured)} | ${g.floor}: ${us(g.floorCpu)} | ${ratioOf(g).toFixed(2)}× |`,
        )
        .join("\n") +
      "\n",
  );
}
