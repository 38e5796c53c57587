/**
 * The task state machine. The row in PostgreSQL is the truth; every transition is one compare-and-set statement of
 * `TaskLifecycle` that names the states (and, for a worker's writes, the lease) it may start from, and a write that
 * finds the row elsewhere changes nothing.
 *
 *                       create (dedup)
 *                            │
 *                            ▼
 *   ┌──── cancel ──────  waiting  ◀──── handBack / retryWait / reconcile (lease lapsed)
 *   │   (not held)        │   ▲                                      │
 *   │                claim│   │                                      │
 *   │                     ▼   │                                      │
 *   │                   active ─── progress (holder only) ───────────┘
 *   │                     │
 *   │      complete / fail / cancel (holder only) ; giveUp (BullMQ gave up)
 *   ▼                     ▼
 * cancelled          completed | failed | cancelled
 *
 * - `active` means a live lease: the claiming worker process renews `lease_expires_at` while the attempt runs there
 *   (keepLeases, by lease token); a lapsed lease reads as `waiting` at once (presentState) and is moved there by the
 *   reconciler, and a later claim takes it over under a new token.
 * - `waiting` after a start says why and at which attempt (`attemptsMade`, `failedReason`).
 * - `attemptsMade` counts claims: every attempt that started, whether it ended, was handed back or died.
 */
export type TaskState = "waiting" | "active" | "completed" | "failed" | "cancelled";

export const TERMINAL_STATES: readonly TaskState[] = ["completed", "failed", "cancelled"];

/** The named transitions, with the states each may start from (the guard every statement carries). */
export const TRANSITIONS = {
  create: { from: [], to: "waiting", by: "the gateway; an identical waiting or active request is returned instead" },
  failUnqueued: { from: ["waiting"], to: "failed", by: "the gateway, when the job cannot be queued" },
  claim: { from: ["waiting", "active (lease lapsed)"], to: "active", by: "a worker; attemptsMade + 1, new lease" },
  progress: { from: ["active (holder)"], to: "active", by: "the lease holder, in its step's transaction" },
  handBack: { from: ["active (holder)"], to: "waiting", by: "a worker shutting down; its job goes back at once" },
  retryWait: { from: ["active (holder)"], to: "waiting", by: "a failed attempt BullMQ will retry" },
  complete: { from: ["active (holder)"], to: "completed", by: "the lease holder" },
  fail: { from: ["active (holder)"], to: "failed", by: "the lease holder: last attempt, or nothing to retry" },
  cancel: {
    from: ["waiting", "active (lease lapsed)", "active (holder)"],
    to: "cancelled",
    by: "the gateway (waiting, lapsed), the claim or reconcile (cancel requested), the holder between steps, or the holder's process (an attempt that did not stop)",
  },
  giveUp: { from: ["waiting", "active"], to: "failed", by: "BullMQ failed the job without running it" },
  reconcile: {
    from: ["active (lease lapsed)", "waiting (job vanished)"],
    to: "waiting",
    by: "the reconciler: lapsed leases wait again, vanished jobs are queued again",
  },
} as const;

export type TransitionName = keyof typeof TRANSITIONS;
