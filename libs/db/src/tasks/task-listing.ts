import type pg from "pg";
import type { TaskState, TaskType } from "../generated/prisma/client";
import type { TaskRow } from "./task-row";
import { COLUMNS, LAPSED } from "./task-sql";

/** listTasks' filters; every one optional. Times are epoch ms, `createdAfter` inclusive, `createdBefore` exclusive. */
export interface TaskFilter {
  type?: TaskType;
  /** the state as presentState shows it: `waiting` includes active tasks whose lease lapsed, `active` excludes them */
  state?: TaskState;
  createdBy?: string;
  createdAfter?: number;
  createdBefore?: number;
}

export interface TaskPage {
  start: number;
  count: number;
  total: number;
  tasks: TaskRow[];
}

/**
 * The state filter in SQL, as presentState presents a row: an active task whose worker stopped renewing its lease
 * reads (and is found) as waiting.
 */
const STATE_CONDITION: Record<TaskState, string> = {
  // state IN (...) first: an index on state finds the few unfinished rows without reading the finished ones.
  waiting: `(state IN ('waiting', 'active') AND (state = 'waiting' OR ${LAPSED}))`,
  active: `(state = 'active' AND NOT ${LAPSED})`,
  completed: "state = 'completed'",
  failed: "state = 'failed'",
  cancelled: "state = 'cancelled'",
};

/**
 * The page's statement and the count's, for `filter` and `page`: `listTasks` runs them; tests EXPLAIN them (each
 * filter's page is read along an index).
 */
export function listTasksQueries(
  filter: TaskFilter,
  page: { start: number; count: number },
): { page: { text: string; values: unknown[] }; total: { text: string; values: unknown[] } } {
  const conditions: string[] = [];
  const values: unknown[] = [];
  const param = (value: unknown) => `$${values.push(value)}`;
  if (filter.type !== undefined) conditions.push(`type = ${param(filter.type)}::"TaskType"`);
  if (filter.state !== undefined) conditions.push(STATE_CONDITION[filter.state]);
  if (filter.createdBy !== undefined) conditions.push(`created_by = ${param(filter.createdBy)}`);
  if (filter.createdAfter !== undefined) {
    conditions.push(`created_at >= to_timestamp(${param(filter.createdAfter)} / 1000.0)`);
  }
  if (filter.createdBefore !== undefined) {
    conditions.push(`created_at < to_timestamp(${param(filter.createdBefore)} / 1000.0)`);
  }
  const where = conditions.length > 0 ? `WHERE ${conditions.join(" AND ")}` : "";
  const total = { text: `SELECT count(*) AS total FROM task ${where}`, values: [...values] };
  const text = `SELECT ${COLUMNS} FROM task ${where} ORDER BY created_at DESC, id DESC
    LIMIT ${param(page.count)} OFFSET ${param(page.start)}`;
  return { page: { text, values }, total };
}

/**
 * Tasks newest first (created_at, then id, so pages never overlap or skip within one instant), filtered, one page of
 * them and how many match. Indexes: (created_by, created_at DESC, id DESC), (state, created_at DESC, id DESC) and
 * (created_at DESC) serve every filter in that order; the caller bounds `start` and `count`.
 */
export async function listTasks(
  client: pg.Pool | pg.ClientBase,
  filter: TaskFilter,
  page: { start: number; count: number },
): Promise<TaskPage> {
  const queries = listTasksQueries(filter, page);
  const { rows } = await client.query<TaskRow>(queries.page.text, queries.page.values);
  // The count only when the page does not tell it: a first page shorter than asked holds every match.
  const total =
    page.start === 0 && rows.length < page.count
      ? rows.length
      : Number((await client.query<{ total: string }>(queries.total.text, queries.total.values)).rows[0]!.total);
  return { start: page.start, count: rows.length, total, tasks: rows };
}
