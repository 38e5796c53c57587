import { z } from "zod";
import { cronPatternProblem, MAX_CRON_LENGTH } from "@mdp/queues";
import { pageInput } from "../shared/paging";

/* The retention-policy operations' contracts (their limits and inputs) and the policy as answered. */

/** How many retention policies may exist (docs/limits.md): each is a schedule every truncation worker reconciles. */
export const MAX_RETENTION_POLICIES = 100;
/** The longest retention: 10 years (3,650 days of 86,400,000 ms); longer keeps everything anyway. */
export const MAX_RETAIN_DAYS = 3650;

const text = (what: string) =>
  z
    .string({ error: `is required (${what})` })
    .min(1, { error: `is required (${what})` })
    .max(256, { error: "is longer than the limit of 256 characters" });
const retainDays = z
  .number({ error: `must be a whole number of days from 1 to ${MAX_RETAIN_DAYS}` })
  .int({ error: `must be a whole number of days from 1 to ${MAX_RETAIN_DAYS}` })
  .min(1, { error: "must be at least 1 (day)" })
  .max(MAX_RETAIN_DAYS, { error: `must be at most ${MAX_RETAIN_DAYS} (days, 10 years)` });
/** A cron field that BullMQ's job schedulers accept and that fires at most once every `minIntervalSeconds`. */
const cronField = (minIntervalSeconds: number) =>
  z
    .string({ error: "is required (a cron pattern)" })
    .min(1, { error: "is required (a cron pattern)" })
    .max(MAX_CRON_LENGTH, { error: `is longer than the limit of ${MAX_CRON_LENGTH} characters` })
    .superRefine((pattern, ctx) => {
      const problem = cronPatternProblem(pattern, minIntervalSeconds);
      if (problem) ctx.addIssue({ code: "custom", message: problem });
    });

/** createRetentionPolicy's input: every field required, no other field. */
export const createRetentionPolicyInput = (minIntervalSeconds: number) =>
  z.strictObject({
    entityType: text("an entity type"),
    aspect: text("an aspect name"),
    retainDays,
    cron: cronField(minIntervalSeconds),
  });
/** updateRetentionPolicy's input: the fields to change (at least one). */
export const updateRetentionPolicyInput = (minIntervalSeconds: number) =>
  z
    .strictObject({
      entityType: text("an entity type").optional(),
      aspect: text("an aspect name").optional(),
      retainDays: retainDays.optional(),
      cron: cronField(minIntervalSeconds).optional(),
    })
    .refine((i) => Object.values(i).some((v) => v !== undefined), { error: "give at least one field to change" });

export const listRetentionPoliciesArgs = pageInput({});

export type CreateRetentionPolicyInput = z.input<ReturnType<typeof createRetentionPolicyInput>>;
export type UpdateRetentionPolicyInput = z.input<ReturnType<typeof updateRetentionPolicyInput>>;

/** A policy as GraphQL shows it. */
export interface RetentionPolicyView {
  urn: string;
  entityType: string;
  aspect: string;
  retainDays: number;
  cron: string;
  /** when its schedule fires next (epoch ms), from its BullMQ job scheduler; null while it has none */
  nextRunTime: number | null;
  lastTaskId: string | null;
  lastTaskState: string | null;
  createdBy: string;
  /** whom its scheduled runs act for: whoever last created, changed or resumed it */
  ownerUrn: string;
  /** while suspended (its owner lost MANAGE_SYSTEM_OPERATIONS, or revokeActorAccess): when, and why */
  suspendedAt: number | null;
  suspendedReason: string | null;
  /** slots its schedule could not run (Redis lost its job scheduler across them; the latest ran late) */
  missedRuns: number;
  lastMissedAt: number | null;
  createdAt: number;
  updatedAt: number;
}
