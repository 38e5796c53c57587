import { z } from "zod";
import { needs, resolver } from "../graphql/resolver";
import { parseBody } from "../shared/validate";
import { listTasksRequest, type TaskStatus } from "./task.service";

export const taskTypeDefs = /* GraphQL */ `
  enum TaskType {
    TRUNCATE_TIMESERIES
    EVALUATE_TESTS
  }

  "As getTaskStatus shows it: an active task whose worker stopped responding is waiting."
  enum TaskState {
    waiting
    active
    completed
    failed
    cancelled
  }

  "A task as getTaskStatus answers it over HTTP; JSON values are JSON text."
  type TaskStatus {
    taskId: String!
    type: TaskType!
    state: TaskState!
    "JSON object"
    progress: String!
    "JSON: the request as the task stores it"
    request: String!
    "JSON, null until the task completes"
    result: String
    failedReason: String
    attemptsMade: Int!
    cancelRequested: Boolean!
    "the urn of the user who asked for it"
    createdBy: String!
    createdAt: Long!
    startedAt: Long
    finishedAt: Long
  }

  input ListTasksInput {
    type: TaskType
    state: TaskState
    "a corpuser urn"
    createdBy: String
    "epoch ms, inclusive"
    createdAfter: Long
    "epoch ms, exclusive"
    createdBefore: Long
    "0 to 10000; page further back with createdBefore"
    start: Int = 0
    "1 to 100"
    count: Int = 20
  }

  type ListTasksResult {
    start: Int!
    count: Int!
    total: Int!
    "newest first"
    tasks: [TaskStatus!]!
  }

  extend type Query {
    "Tasks newest first, filtered (GET_TASK_STATUS); the same as POST /gms/operations?action=listTasks."
    listTasks(
      "Filters (type, state, createdBy, createdAfter, createdBefore) and the page."
      input: ListTasksInput!
    ): ListTasksResult!
  }
`;

/** GraphQL gives null for a field left out; the shared request schema wants it absent. */
const withoutNulls = (input: unknown) =>
  input !== null && typeof input === "object"
    ? Object.fromEntries(Object.entries(input).filter(([, value]) => value !== null))
    : input;

const listTasksArgs = z.object({ input: z.unknown() });

const jsonText = (value: unknown) => JSON.stringify(value ?? null);

export const taskResolvers = {
  TaskStatus: {
    progress: (task: TaskStatus) => jsonText(task.progress),
    request: (task: TaskStatus) => jsonText(task.request),
    result: (task: TaskStatus) => (task.result === null || task.result === undefined ? null : jsonText(task.result)),
  },
  Query: {
    listTasks: resolver({ requires: needs("GET_TASK_STATUS", "list tasks"), args: listTasksArgs }, (s, actor, args) =>
      // GraphQL has typed `input`; its contract is the HTTP action's, read as the action reads its body (a problem
      // names its field as the action's does).
      s.tasks.list(actor, parseBody(listTasksRequest, withoutNulls(args.input))),
    ),
  },
};
