import { randomUUID } from "node:crypto";
import { hostname } from "node:os";
import type { TaskRow } from "@mdp/db";

/** The right to write an active task: held by one attempt of one worker process. */
export interface Lease {
  readonly taskId: string;
  /** names this attempt in every write: a stale attempt's writes match nothing */
  readonly token: string;
  /** the attempt's number (attemptsMade after the claim) */
  readonly attempt: number;
}

/** A worker's write found the task no longer held by its attempt: another attempt took it over, or it was reclaimed. */
export class LeaseLostError extends Error {
  constructor(taskId: string) {
    super(`Task ${taskId} is no longer held by this attempt (its lease lapsed and it was taken over)`);
    this.name = "LeaseLostError";
  }
}

export type ClaimResult =
  | { outcome: "missing" }
  /** already completed, failed or cancelled: a duplicate delivery */
  | { outcome: "finished"; task: TaskRow }
  /** asked to stop before this attempt started: ended as cancelled here */
  | { outcome: "cancelled"; task: TaskRow; reason: string }
  /** another attempt holds a live lease (BullMQ delivered the job again while it runs): try again after `retryInMs` */
  | { outcome: "held"; retryInMs: number }
  /** `task` is the row as the previous attempts left it */
  | { outcome: "claimed"; task: TaskRow; lease: Lease };

export interface LifecycleOptions {
  /** how long a claim or renewal holds a task without another renewal; default 10 s */
  leaseMs?: number;
  /** this worker process's name in lease_owner; default `<host>:<pid>:<random>` (see defaultOwner) */
  owner?: string;
}

export const DEFAULT_LEASE_MS = 10_000;
/** How soon a job whose claim could not reach PostgreSQL is delivered again. */
export const CLAIM_RETRY_MS = 1_000;

/**
 * A worker process's name: its host and pid say where to look for its logs; the random part keeps a restarted
 * process (pid 1 again in its container) from renewing the leases its dead predecessor left.
 */
export function defaultOwner(): string {
  return `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
}
