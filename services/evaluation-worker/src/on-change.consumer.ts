import { randomUUID } from "node:crypto";
import { hostname } from "node:os";
import { withTimeout } from "@mdp/core";
import {
  advancePartition,
  backlogOfOwner,
  carryOver,
  inTransaction,
  ownersWithBacklog,
  sequencePlatformEvents,
  streamEnd,
  TEST_ACTIONS_APP_SOURCE,
  type AspectChangeFilter,
  type BacklogEntry,
  type HeldPartition,
  type PartitionRead,
} from "@mdp/db";
import type { EvaluateDeps } from "./evaluation-deps";
import type { StoredTest } from "./evaluation.store";
import { countCarried, countOnChange } from "./evaluation-metrics";
import { changesOf, entitySnapshots, evaluateForOwner } from "./on-change-evaluation";
import { emptyPass, ON_CHANGE_CONSUMER, type OnChangePass, type OnChangeSettings } from "./on-change-settings";
import { OnChangeTests } from "./on-change-tests";
import { fenceOf, LostPartition, pushFenced } from "./on-change-push";
import { markBacklog, OwnerLanes, type OwnerLane } from "./owner-lanes";
import { PartitionClaims } from "./partition-claims";
import { TEST_RESULTS_ASPECT } from "./results.pusher";

/** The events evaluation on change reads (changesOf drops the rest). */
const CHANGES_TESTS_READ: AspectChangeFilter = {
  skipAspects: [TEST_RESULTS_ASPECT],
  skipAppSource: TEST_ACTIONS_APP_SOURCE,
};

/** Entities of one owner's backlog evaluated (and pushed) together. */
const BACKLOG_BATCH = 100;

/** A partition pass whose partition another worker had taken over: it committed nothing. */
const LOST = Symbol("lost");

/**
 * Evaluation on change (docs/evaluation-on-change.md): the platform-event outbox read in partitions by entity urn,
 * each held by one worker at a time under a lease (partition-claims.ts). A pass, per partition held: read its next
 * committed events, evaluate each entity they name once against the tests that evaluate on change and select it, push
 * the results, and move the partition's position past the events; a pass that fails, or whose partition was taken
 * over, commits nothing and is redone. Each owner's tests are evaluated as that owner's pool task and pushed in a
 * transaction of its own; an owner not done within ON_CHANGE_OWNER_BUDGET_MS is carried over to its backlog
 * (on_change_backlog) with the position's move, and its next changes queue behind the backlog as it drains, in order.
 */
export class OnChangeEvaluator {
  readonly holder: string;
  private readonly held: PartitionClaims;
  private closed = false;
  private readonly lanes: OwnerLanes;
  private readonly inFlight = new Set<Promise<unknown>>();
  private readonly tests: OnChangeTests;

  constructor(
    private readonly deps: Pick<EvaluateDeps, "db" | "pool" | "pusher" | "ownerPrivileges" | "logger">,
    private readonly settings: OnChangeSettings,
  ) {
    this.holder = settings.holder ?? `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
    this.lanes = new OwnerLanes(settings);
    this.tests = new OnChangeTests(deps, settings);
    this.held = new PartitionClaims(
      deps.db.pool,
      this.holder,
      // A pass waits at most the owners' budget for evaluation; five leases more is hung, not slow.
      { ...settings, stuckAfterMs: settings.ownerBudgetMs + 5 * settings.leaseMs },
      async (partition) => {
        for (const ownerUrn of await ownersWithBacklog(deps.db.pool, partition))
          markBacklog(this.lanes.lane(partition, ownerUrn));
      },
      deps.logger,
    );
  }

  /** The partitions this worker holds (as of its last claim). */
  partitionsHeld(): number[] {
    return this.held.ids();
  }

  /** Keeps the leases between passes (see PartitionClaims); the loop starts it, close stops it. */
  keepLeases(): void {
    this.held.keep();
  }

  /**
   * Passes until one leaves no partition with more to read (caught up: see partitionEventsAfter's `more`) or
   * `maxPasses` ran; null when this worker holds no partition. The sum of what the passes did.
   */
  async drain(maxPasses = 10): Promise<OnChangePass | null> {
    const total = emptyPass();
    for (let i = 0; i < maxPasses; i++) {
      const pass = await this.passReporting();
      if (!pass) return i === 0 ? null : total;
      for (const key of Object.keys(total) as Array<keyof OnChangePass>) total[key] += pass.done[key];
      if (!pass.full) break;
    }
    return total;
  }

  /** One pass over every partition this worker holds (see the class); null when it holds none. */
  async pass(): Promise<OnChangePass | null> {
    return (await this.passReporting())?.done ?? null;
  }

  /**
   * Resolves once this worker's owners' work carried past its passes is done and no backlog it holds is left but
   * those of owners waiting for their budget or a retry (tests): drains what is waiting.
   */
  async idle(): Promise<void> {
    for (;;) {
      for (const lane of this.lanes.values()) if (lane.backlog && !lane.busy) this.startDrain(lane);
      if (this.inFlight.size === 0) return;
      await Promise.allSettled([...this.inFlight]);
    }
  }

  /**
   * Stops (its loop stopped first): no pass or backlog batch starts meanwhile, the work in flight ends (within
   * `waitMs`), and the partitions are released for the other workers at once. A pass called later claims again.
   */
  async close(waitMs = 10_000): Promise<void> {
    this.closed = true;
    // Past waitMs the work goes on unwaited for: its partitions are released below all the same.
    await withTimeout(Promise.allSettled([...this.inFlight]), waitMs).catch(() => undefined);
    try {
      await this.held.release();
    } finally {
      this.closed = false;
    }
  }

  private async passReporting(): Promise<{ done: OnChangePass; full: boolean } | null> {
    if (this.closed) return null;
    // Committed events get their positions first, in a transaction of their own (see sequencePlatformEvents).
    const sequenced = await inTransaction(this.deps.db.pool, (client) =>
      sequencePlatformEvents(client, this.settings.batchSize),
    );
    await this.held.claimForPass();
    if (this.held.size === 0) return null;
    // Where the stream ends, read once for every partition: an idle pass costs two statements, not one a partition.
    const end = await streamEnd(this.deps.db.pool);
    const passAll = () =>
      this.held.during(async () => {
        const reads = await this.held.readNext(this.settings.batchSize, end, CHANGES_TESTS_READ);
        return Promise.all(
          reads.map(({ held, read }) => (read ? this.partitionPass(held, read) : Promise.resolve(LOST))),
        );
      });
    let passes = await passAll();
    if (passes.some((p) => p === LOST)) {
      // A partition was taken over (this worker's lease lapsed): claim again at once, and pass what it holds now.
      await this.held.claimForPass(true);
      passes = await passAll();
    }
    const done = emptyPass();
    for (const pass of passes) {
      if (pass === LOST) continue;
      for (const key of Object.keys(done) as Array<keyof OnChangePass>) done[key] += pass[key];
    }
    // More to read: a partition's batch was full, or the sequencer numbered a whole batch (more may wait unnumbered).
    return { done, full: sequenced >= this.settings.batchSize || passes.some((p) => p !== LOST && p.more) };
  }

  private async partitionPass(
    held: HeldPartition,
    { events, upTo, more }: PartitionRead,
  ): Promise<(OnChangePass & { more: boolean }) | typeof LOST> {
    const pass = { ...emptyPass(events.length), more };
    if (upTo !== held.seq) {
      const { changed, edited } = changesOf(events, this.settings.storable);
      const refused = new Set<string>();
      // Runs first: a worker that cannot start them has pushed nothing of the pass.
      pass.runs = await this.tests.runEdited(edited, refused);
      const committed = deferred<boolean>();
      let outcome: Awaited<ReturnType<OnChangeEvaluator["evaluateChanged"]>>;
      try {
        outcome = await this.evaluateChanged(held, changed, refused, committed.promise);
      } catch (error) {
        committed.resolve(false);
        if (!(error instanceof LostPartition)) throw error;
        // A push found the partition taken over: the new holder reads these events again.
        this.held.lost(held.partition);
        return LOST;
      }
      pass.entities = outcome.entities;
      pass.pushed = outcome.pushed;
      pass.carried = outcome.carried.length;
      pass.refused = refused.size;
      try {
        await inTransaction(this.deps.db.pool, async (client) => {
          await carryOver(client, held.partition, outcome.carried);
          const ok = await advancePartition(client, ON_CHANGE_CONSUMER, held, this.holder, upTo, this.settings.leaseMs);
          if (!ok) throw new LostPartition(`partition ${held.partition} was taken over`);
        });
        committed.resolve(true);
        if (BigInt(upTo) > BigInt(held.seq)) held.seq = upTo; // never back past what a claim found meanwhile
        for (const entry of outcome.carried) markBacklog(this.lanes.lane(held.partition, entry.ownerUrn));
      } catch (error) {
        committed.resolve(false);
        if (!(error instanceof LostPartition)) throw error;
        // Another worker holds it now and reads these events again: nothing of this pass is lost.
        this.held.lost(held.partition);
        return LOST;
      }
      countOnChange(pass, events);
      countCarried(pass.carried);
    }
    for (const lane of this.lanes.values()) {
      if (lane.partition === held.partition && lane.backlog && !lane.busy) this.startDrain(lane);
    }
    return pass;
  }

  /**
   * Each owner's evaluation of the changed entities its tests select, pushed in a transaction of its own as soon as
   * it is done. Those not done within the owner budget (or whose owner has work in flight or a backlog: its changes
   * stay in order) are `carried`: the pass writes them to the backlog with its position's move, and an evaluation
   * still running pushes once that committed, taking its entries off the backlog in the push's transaction.
   */
  private async evaluateChanged(
    held: HeldPartition,
    changed: ReadonlyMap<string, { type: string; seq: string }>,
    refused: Set<string>,
    committed: Promise<boolean>,
  ): Promise<{ entities: number; pushed: number; carried: BacklogEntry[] }> {
    const none = { entities: 0, pushed: 0, carried: [] };
    const { partition } = held;
    const fence = { partitions: [partition], layout: held.partitions };
    if (changed.size === 0) return none;
    const types = [...new Set([...changed.values()].map((c) => c.type))];
    const tests = await this.tests.permitted(await this.tests.testsSelecting(types), refused);
    if (tests.length === 0) return none;
    const selected = [...changed].filter(([, c]) => tests.some((t) => t.onTypes.includes(c.type)));
    if (selected.length === 0) return none;
    const entities = await entitySnapshots(
      this.deps.db.pool,
      selected.map(([urn]) => urn),
    );
    const byOwner = new Map<string, StoredTest[]>();
    for (const test of tests) byOwner.set(test.ownerUrn, [...(byOwner.get(test.ownerUrn) ?? []), test]);
    const carried: BacklogEntry[] = [];
    const accepted: Array<Promise<number>> = [];
    let budgetSpent = false;
    const budget = deferred<void>();
    const timer = setTimeout(() => {
      budgetSpent = true;
      budget.resolve();
    }, this.settings.ownerBudgetMs);
    const at = Date.now();
    for (const [ownerUrn, ownerTests] of byOwner) {
      const entries: BacklogEntry[] = selected
        .filter(([, c]) => ownerTests.some((t) => t.onTypes.includes(c.type)))
        .map(([entityUrn, c]) => ({ ownerUrn, entityUrn, entityType: c.type, seq: c.seq }));
      if (entries.length === 0) continue;
      const lane = this.lanes.lane(partition, ownerUrn);
      if (lane.busy || lane.backlog || (await this.lanes.budgetSpent(lane))) {
        carried.push(...entries);
        markBacklog(lane);
        continue;
      }
      lane.busy = true;
      let carriedOver = false;
      let settled = false;
      const work = this.lanes
        .ownerTurn(ownerUrn, async () => {
          const items = await evaluateForOwner(this.deps, this.settings.rateLimits, ownerTests, entities, at);
          if (!carriedOver) return pushFenced(this.deps, this.holder, items, [], fence);
          // Past the budget: pushed once the pass committed its entries, which leave the backlog with the push. A
          // pass that committed nothing is done again, this evaluation with it.
          if (!(await committed)) return 0;
          return pushFenced(
            this.deps,
            this.holder,
            items,
            entries.map((e) => ({ ...e, partition })),
            fence,
          );
        })
        .finally(() => (settled = true));
      this.track(
        work.finally(() => {
          lane.busy = false;
          if (lane.backlog) this.startDrain(lane);
        }),
      );
      accepted.push(
        Promise.race([
          work,
          budget.promise.then(() => {
            if (!budgetSpent || settled) return 0;
            carriedOver = true;
            carried.push(...entries);
            markBacklog(lane);
            return 0;
          }),
        ]),
      );
    }
    try {
      const pushed = (await Promise.all(accepted)).reduce((a, b) => a + b, 0);
      return { entities: entities.size, pushed, carried };
    } finally {
      clearTimeout(timer);
      budget.resolve();
    }
  }

  /**
   * Drains an owner's backlogs, of every partition this worker holds, in order: a batch is the oldest entries of them
   * all (one pool task, one push), so an owner whose changes fall in every partition pays a batch's round trips once,
   * not once a partition, and catches up within a batch rather than a round of them.
   */
  private startDrain(lane: OwnerLane): void {
    const owner = lane.ownerUrn;
    const held = (partition: number) => this.held.has(partition);
    // A drain running takes this lane at its next batch; none to drain yet (a retry, a budget): nothing starts.
    if (this.closed || this.lanes.draining.has(owner) || this.lanes.drainable(owner, held).length === 0) return;
    this.lanes.draining.add(owner);
    const drained = (async () => {
      try {
        for (;;) {
          const lanes = this.lanes.drainable(owner, held);
          if (lanes.length === 0 || this.closed || (await this.lanes.budgetSpent(lanes[0]!, lanes))) return;
          for (const l of lanes) l.busy = true;
          try {
            await this.drainBatch(owner, lanes);
          } catch (error) {
            // Its entries stay in the backlog: taken again after a second (by this worker if it still holds them).
            for (const l of lanes) {
              markBacklog(l);
              l.retryAt = Date.now() + 1_000;
            }
            if (error instanceof LostPartition) continue;
            this.deps.logger.warn(
              { err: error, owner, partitions: lanes.map((l) => l.partition) },
              "evaluation on change: an owner's backlog batch failed; it is taken again",
            );
          } finally {
            for (const l of lanes) l.busy = false;
          }
        }
      } finally {
        this.lanes.draining.delete(owner);
      }
    })();
    this.track(drained);
  }

  private async drainBatch(owner: string, lanes: readonly OwnerLane[]): Promise<void> {
    const partitions = lanes.map((l) => l.partition);
    const marks = lanes.map((l) => l.marks);
    const entries = await backlogOfOwner(this.deps.db.pool, partitions, owner, BACKLOG_BATCH);
    // Read whole: cleared, but not on a lane a pass marked since the read began (its entry may have committed after
    // the read's snapshot, and clearing would leave it waiting for the owner's next change).
    lanes.forEach((l, i) => {
      if (entries.length < BACKLOG_BATCH && l.marks === marks[i]) l.backlog = false;
    });
    if (entries.length === 0) return;
    await this.lanes.ownerTurn(owner, async () => {
      const types = [...new Set(entries.map((e) => e.entityType))];
      const refused = new Set<string>();
      const tests = await this.tests.permitted(await this.tests.testsSelecting(types, owner), refused);
      const urns = entries.map((e) => e.entityUrn);
      const items =
        tests.length === 0
          ? []
          : await evaluateForOwner(
              this.deps,
              this.settings.rateLimits,
              tests,
              await entitySnapshots(this.deps.db.pool, urns),
              Date.now(),
            );
      const fence = fenceOf(
        this.held.values(),
        entries.map((e) => e.partition),
      );
      await pushFenced(this.deps, this.holder, items, entries, fence);
    });
  }

  private track(work: Promise<unknown>): void {
    const tracked = work.catch((error: unknown) => {
      // Its partition's new holder evaluates the same changes again: nothing is lost, nothing to warn of.
      if (error instanceof LostPartition) return;
      this.deps.logger.warn({ err: error }, "evaluation on change: an owner's work carried past its pass failed");
    });
    this.inFlight.add(tracked);
    void tracked.finally(() => this.inFlight.delete(tracked));
  }
}

function deferred<T>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}
