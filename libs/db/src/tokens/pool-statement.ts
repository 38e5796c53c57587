import type pg from "pg";
import type { Prisma } from "../generated/prisma/client";
import type { Queryable } from "../timeseries/timeseries.store";

/** `name`: a prepared statement of that name (for a statement whose text never changes). */
export async function run<Row extends pg.QueryResultRow>(pool: Queryable, statement: Prisma.Sql, name?: string) {
  return (await pool.query<Row>({ name, text: statement.text, values: statement.values })).rows;
}
