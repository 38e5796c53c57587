import type { RateLimits } from "@mdp/queues";
import type { StoredTest } from "./evaluation.store";

/** The consumer's name in platform_event_partition. */
export const ON_CHANGE_CONSUMER = "evaluate-on-change";

/** The audit action of a test whose evaluation on change was suspended: its owner lost what it needs. */
export const ON_CHANGE_SUSPENDED_ACTION = "test.onChange.suspended";

export interface OnChangeSettings {
  /** ON_CHANGE_BATCH_SIZE: events read per partition and pass (the entities they name are evaluated together, each once) */
  batchSize: number;
  /** ROOT_USER_URN: the root user's built-in policy counts when an owner's grants are read */
  rootUserUrn: string;
  /** whether results of entities of this type can be stored (the registry gives it a testResults aspect) */
  storable: (entityType: string) => boolean;
  /** starts a test's run over every entity it selects (for its owner): after its definition changed */
  startRun: (test: StoredTest) => Promise<void>;
  /**
   * where the owners' evaluation time is charged (RATE_LIMIT_EVALUATION_SECONDS_PER_MINUTE), when limits are on: an
   * owner past it has its changes carried over until its budget refills
   */
  rateLimits?: Pick<RateLimits, "charge" | "refuseIfSpent">;
  /** ON_CHANGE_PARTITIONS */
  partitions: number;
  /** ON_CHANGE_LEASE_MS */
  leaseMs: number;
  /** ON_CHANGE_OWNER_BUDGET_MS */
  ownerBudgetMs: number;
  /** this worker's name in the partitions' leases (default: its host, pid and a random suffix) */
  holder?: string;
}

/** What one pass did. */
export interface OnChangePass {
  /** events read (the partitions' positions moved past them) */
  events: number;
  /** distinct entities evaluated: each changed entity once per pass, however many of its changes the pass read */
  entities: number;
  /** entities that got a new testResults version within the pass */
  pushed: number;
  /** test runs started for tests whose definition changed */
  runs: number;
  /** tests skipped because their owner lacks what they need now (suspended) */
  refused: number;
  /** entities whose evaluation for an owner went on behind the pass (that owner's backlog) */
  carried: number;
}

export const emptyPass = (events = 0): OnChangePass => ({
  events,
  entities: 0,
  pushed: 0,
  runs: 0,
  refused: 0,
  carried: 0,
});
