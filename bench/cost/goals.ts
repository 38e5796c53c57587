/**
 * The goals of bench/cost: an operation's CPU per request in one process against its floor's (the same stack doing the
 * same core work, measured in the same run), as a ratio with its limit, MET or NOT MET. Where an operation and its
 * floor are measured in rounds (each round the operation's window, then its floor's), a goal's ratio is the median of
 * the rounds' ratios: the machine's speed drifts over minutes (an echo floor measured 266 and 576 µs a request minutes
 * apart), and a floor measured minutes after its operation carried that drift into the ratio.
 */
import { median } from "../support/load";
import type { Cost } from "./meter";

/** BENCH_COST_ROUNDS: rounds of paired windows (the operation's, then its floor's) per goal */
export const ROUNDS = Number(process.env.BENCH_COST_ROUNDS ?? 3);
if (!Number.isInteger(ROUNDS) || ROUNDS < 1) throw new Error("BENCH_COST_ROUNDS: a whole number of rounds, at least 1");

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
  /**
   * A reference of another kind: a kept floor, the goal's bare floor plus something the product must keep (its
   * protections, guarantees or isolation) done plainly, against that bare floor. When it passes the goal's limit in
   * every round, what the product keeps costs more than the limit allows when done the plain way: the product meets
   * the goal only by doing it cheaper than that (as the gateway does its protections on `me`), not by cutting it.
   */
  keeps?: { operation: string; process: string };
  /** each round's ratio, when measured in rounds (their median is the goal's ratio) */
  rounds?: number[];
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

/** `floor`, a kept floor against `goal`'s bare floor, as a reference (see Goal.keeps). */
export const asKept = (floor: Goal, goal: Goal): Goal => ({
  ...floor,
  reference: true,
  keeps: { operation: goal.operation, process: goal.process },
});

/**
 * The goals of several rounds, each round's list in the same order: each goal's ratio the median of its rounds', its
 * CPU figures the medians of theirs.
 */
export function fromRounds(rounds: readonly Goal[][]): Goal[] {
  return rounds[0]!.map((first, i) => {
    const all = rounds.map((round) => round[i]!);
    return {
      ...first,
      measured: median(all.map((g) => g.measured)),
      floorCpu: median(all.map((g) => g.floorCpu)),
      rounds: all.map((g) => g.measured / g.floorCpu),
    };
  });
}

/**
 * Of one operation's windows in rounds, the one whose `process` CPU per unit is the median (as `median` picks it):
 * what the cost table and the capacity model take for that operation.
 */
export function medianCost(costs: readonly Cost[], process: string): Cost {
  const sorted = [...costs].sort((a, b) => (a.cpu[process] ?? 0) - (b.cpu[process] ?? 0));
  return sorted[Math.floor(sorted.length / 2)]!;
}

export const ratioOf = (goal: Goal) => (goal.rounds ? median(goal.rounds) : goal.measured / goal.floorCpu);
export const met = (goal: Goal) => ratioOf(goal) <= goal.limit;

const us = (seconds: number) => (seconds * 1e6).toFixed(seconds * 1e6 >= 100 ? 0 : 1);
/** the ratio, and with rounds their range: `1.92× (1.85–2.01, 3 rounds)` */
const ratioText = (goal: Goal) => {
  const text = `${ratioOf(goal).toFixed(2)}×`;
  if (!goal.rounds || goal.rounds.length < 2) return text;
  const range = `${Math.min(...goal.rounds).toFixed(2)}–${Math.max(...goal.rounds).toFixed(2)}`;
  return `${text} (${range}, ${goal.rounds.length} rounds)`;
};

/** A kept floor against its goal's limit: in every round above it, in some, or in none. */
function keptVerdict(k: Goal, limit: number): string {
  const rounds = k.rounds ?? [ratioOf(k)];
  const above = rounds.filter((r) => r > limit).length;
  if (above === rounds.length)
    return rounds.length > 1 ? "passes it alone, every round" : "passes it alone (one window)";
  return above > 0 ? `passes it alone in ${above} of ${rounds.length} rounds` : "within it";
}

/**
 * The goals as a markdown table, one row each, and how many are met (a goal not met whose kept floor passes its limit
 * in every round says so); then the references against the product, then the kept floors against the bare ones.
 */
export function printGoals(all: Goal[], write: (text: string) => void = (t) => process.stdout.write(t)): void {
  const goals = all.filter((g) => !g.reference);
  const references = all.filter((g) => g.reference && !g.keeps);
  const kept = all.filter((g) => g.keeps);
  const keptFor = (g: Goal) => kept.find((k) => k.keeps!.operation === g.operation && k.keeps!.process === g.process);
  /** the kept floor passes `limit` in every round (a single window: in it) */
  const passes = (k: Goal, limit: number) => (k.rounds ?? [ratioOf(k)]).every((r) => r > limit);
  const keptPasses = (g: Goal) => {
    const k = keptFor(g);
    return !met(g) && k !== undefined && passes(k, g.limit);
  };
  const status = (g: Goal) =>
    met(g)
      ? "MET"
      : keptPasses(g)
        ? `NOT MET; what it keeps, done plainly, is ${ratioOf(keptFor(g)!).toFixed(2)}× alone`
        : "NOT MET";
  const rows = goals.map(
    (g) =>
      `| ${g.operation} | ${g.process} | ${us(g.measured)} | ${g.floor}: ${us(g.floorCpu)} | ` +
      `${ratioText(g)} | ≤ ${g.limit}× | ${status(g)} |`,
  );
  const keptCount = goals.filter(keptPasses).length;
  write(
    `\nCPU per request against its floor (µs, medians; the same run, each round the operation's window then its floor's)\n\n` +
      `| operation | process | CPU | floor | ratio | goal | |\n| --- | --- | ---: | --- | ---: | ---: | --- |\n` +
      rows.join("\n") +
      `\n\n${goals.filter(met).length} of ${goals.length} goals met` +
      (keptCount > 0
        ? `; of those not met, ${keptCount} keep something that, done plainly, passes the limit alone in every round (below)`
        : "") +
      "\n",
  );
  const table = (title: string, head: string, lines: string[]) =>
    lines.length > 0 && write(`\n${title}\n\n${head}\n${lines.join("\n")}\n`);
  table(
    "Against floors that also do what the product keeps (references, not goals)",
    "| operation | process | CPU | floor | ratio |\n| --- | --- | ---: | --- | ---: |",
    references.map(
      (g) => `| ${g.operation} | ${g.process} | ${us(g.measured)} | ${g.floor}: ${us(g.floorCpu)} | ${ratioText(g)} |`,
    ),
  );
  table(
    "What the product keeps, done plainly, on its own: each kept floor against the bare floor of its goal",
    "| floor that keeps it | process | CPU | bare floor | ratio | goal | |\n| --- | --- | ---: | --- | ---: | ---: | --- |",
    kept.map((k) => {
      const goal = goals.find((g) => g.operation === k.keeps!.operation && g.process === k.keeps!.process);
      const limit = goal?.limit ?? k.limit;
      return (
        `| ${k.operation} | ${k.process} | ${us(k.measured)} | ${k.floor}: ${us(k.floorCpu)} | ${ratioText(k)} | ` +
        `${k.keeps!.operation}, ${k.keeps!.process} ≤ ${limit}× | ${keptVerdict(k, limit)} |`
      );
    }),
  );
}
