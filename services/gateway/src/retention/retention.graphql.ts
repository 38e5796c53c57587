import { z } from "zod";
import { SCHEDULE_PRIVILEGES } from "@mdp/core";
import { needs, resolver } from "../graphql/resolver";
import { listRetentionPoliciesArgs } from "./retention-contracts";

export const retentionTypeDefs = /* GraphQL */ `
  """
  Keeps one time-series aspect to its last retainDays days: on its cron schedule (a BullMQ job scheduler, one per
  policy whatever the number of replicas) a truncation task deletes the rows older than now − retainDays × 86,400,000
  ms. MANAGE_SYSTEM_OPERATIONS for every operation.
  """
  type RetentionPolicy {
    "urn:li:retentionPolicy:<id>"
    urn: String!
    entityType: String!
    "the time-series aspect, as the entity registry names it"
    aspect: String!
    retainDays: Int!
    "cron pattern, evaluated in UTC: 5 fields, or 6 with seconds first"
    cron: String!
    "When the schedule fires next (epoch ms, from its job scheduler); null while it is not scheduled (see docs/api.md)."
    nextRunTime: Long
    "The truncation task of the latest run, scheduled or manual: follow it with getTaskStatus."
    lastTaskId: String
    "That task's state, as getTaskStatus shows it."
    lastTaskState: TaskState
    "who created the policy"
    createdBy: String!
    """
    whom its scheduled runs act for, and in whose name their tasks are created: whoever last created, changed or
    resumed it, with their privileges as they are at each run
    """
    ownerUrn: String!
    """
    When the policy was suspended (epoch ms): its owner no longer held MANAGE_SYSTEM_OPERATIONS, or
    revokeActorAccess. While set, its schedule starts nothing; resumeRetentionPolicy or an update clears it.
    """
    suspendedAt: Long
    "Why it was suspended."
    suspendedReason: String
    """
    Slots of its cron that could not run: Redis lost its job scheduler (a restart without persistence, a failover)
    across them. The latest slot that passed meanwhile ran once, late; only the ones before it count here.
    """
    missedRuns: Int!
    "When the latest such gap ended (epoch ms): the slot that then ran late."
    lastMissedAt: Long
    createdAt: Long!
    updatedAt: Long!
  }

  input CreateRetentionPolicyInput {
    entityType: String!
    "a registered time-series aspect of entityType"
    aspect: String!
    "1 to 3650"
    retainDays: Int!
    "5 fields (minute hour day-of-month month day-of-week) or 6 (seconds first), in UTC; at most 256 characters"
    cron: String!
  }

  "The fields to change; at least one."
  input UpdateRetentionPolicyInput {
    entityType: String
    aspect: String
    retainDays: Int
    cron: String
  }

  input ListRetentionPoliciesInput {
    start: Int = 0
    count: Int = 20
  }

  type ListRetentionPoliciesResult {
    start: Int!
    count: Int!
    total: Int!
    "newest first"
    retentionPolicies: [RetentionPolicy!]!
  }

  extend type Query {
    "A retention policy; null when there is none."
    retentionPolicy("The policy's urn, urn:li:retentionPolicy:<id>." urn: String!): RetentionPolicy
    "Retention policies, newest first, each with its next run and last task. Needs MANAGE_SYSTEM_OPERATIONS."
    listRetentionPolicies("The page (start, count)." input: ListRetentionPoliciesInput!): ListRetentionPoliciesResult!
  }

  extend type Mutation {
    """
    Keeps a time-series aspect to its last retainDays days: each firing of cron (UTC) truncates the older rows, as the
    caller (its owner). Needs MANAGE_SYSTEM_OPERATIONS.
    """
    createRetentionPolicy(
      "The aspect (entityType, aspect), retainDays and cron."
      input: CreateRetentionPolicyInput!
    ): RetentionPolicy!
    "Changes a retention policy (its schedule follows); the caller becomes its owner. Needs MANAGE_SYSTEM_OPERATIONS."
    updateRetentionPolicy(
      "The policy's urn."
      urn: String!
      "The fields to change; at least one."
      input: UpdateRetentionPolicyInput!
    ): RetentionPolicy!
    "Removes the policy and its schedule; a task of it that is running finishes."
    deleteRetentionPolicy("The policy's urn." urn: String!): Boolean!
    """
    With dryRun (the default) the report truncateTimeseriesAspect's dry run gives for the policy's cutoff now;
    otherwise starts the policy's truncation task and returns its id (joining the policy's task still waiting or
    running, if any).
    """
    runRetentionPolicy(
      "The policy's urn."
      urn: String!
      "false to start the truncation task; true (the default) for the dry-run report only."
      dryRun: Boolean = true
    ): String!
    """
    Resumes a suspended policy; the caller becomes its owner (room under MAX_SCHEDULES_PER_USER needed). CONFLICT
    when it is not suspended.
    """
    resumeRetentionPolicy("The policy's urn." urn: String!): RetentionPolicy!
  }
`;

/** GraphQL gives null for a field left out; the input schemas want it absent. */
const withoutNulls = (input: Record<string, unknown>) =>
  Object.fromEntries(Object.entries(input).filter(([, value]) => value !== null));

/**
 * GraphQL has checked these arguments' types; the policy's own fields are parsed by the service (its contract reads the
 * schedule's minimum interval, and its refusals name every problem at once).
 */
const urnArg = z.object({ urn: z.string() });
const inputArg = z.object({ input: z.record(z.string(), z.unknown()) });
const may = (to: string) => needs(SCHEDULE_PRIVILEGES.RETENTION_POLICY, to);

export const retentionResolvers = {
  Query: {
    retentionPolicy: resolver({ requires: may("read retention policies"), args: urnArg }, (s, actor, { urn }) =>
      s.retention.get(actor, urn),
    ),
    listRetentionPolicies: resolver(
      { requires: may("list retention policies"), args: listRetentionPoliciesArgs },
      (s, _actor, args) => s.retention.list(args),
    ),
  },
  Mutation: {
    createRetentionPolicy: resolver({ requires: may("manage retention policies"), args: inputArg }, (s, actor, args) =>
      s.retention.create(actor, withoutNulls(args.input)),
    ),
    updateRetentionPolicy: resolver(
      { requires: may("manage retention policies"), args: urnArg.extend(inputArg.shape) },
      (s, actor, args) => s.retention.update(actor, args.urn, withoutNulls(args.input)),
    ),
    deleteRetentionPolicy: resolver({ requires: may("manage retention policies"), args: urnArg }, (s, actor, { urn }) =>
      s.retention.delete(actor, urn),
    ),
    runRetentionPolicy: resolver(
      { requires: may("run retention policies"), args: urnArg.extend({ dryRun: z.boolean().nullish() }) },
      (s, actor, args) => s.retention.run(actor, args.urn, args.dryRun ?? true),
    ),
    resumeRetentionPolicy: resolver({ requires: may("resume retention policies"), args: urnArg }, (s, actor, { urn }) =>
      s.retention.resume(actor, urn),
    ),
  },
};
