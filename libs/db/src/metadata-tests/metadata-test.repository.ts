import type { MetadataTest, Prisma, PrismaClient } from "../generated/prisma/client";
import { likeLiteral } from "../like";
import type { Queryable } from "../timeseries/timeseries.store";

/**
 * The metadata_test table: the gateway's writes (in the caller's transaction, with their audit rows) and reads, and
 * the evaluation worker's reads of what a test selects and does (plain pg on its push transaction's client). Who a
 * scheduled test acts for, and its suspension: policies/scheduled-work.ts.
 */

type Db = Pick<Prisma.TransactionClient, "metadataTest">;

/** Throws Prisma's P2002 when the urn is taken (isUniqueViolation). */
export async function insertTest(tx: Db, row: Prisma.MetadataTestCreateInput): Promise<void> {
  await tx.metadataTest.create({ data: row });
}

/** Locks the test's row for the rest of the caller's transaction (nothing when there is none). */
export async function lockTest(tx: Pick<Prisma.TransactionClient, "$queryRaw">, urn: string): Promise<void> {
  await tx.$queryRaw`SELECT 1 FROM metadata_test WHERE urn = ${urn} FOR UPDATE`;
}

export function findTest(db: Db, urn: string): Promise<MetadataTest | null> {
  return db.metadataTest.findUnique({ where: { urn } });
}

/** Throws Prisma's P2025 when there is no such row (notFoundWhenMissing turns it into a 404). */
export function updateTest(tx: Db, urn: string, data: Prisma.MetadataTestUpdateInput): Promise<MetadataTest> {
  return tx.metadataTest.update({ where: { urn }, data });
}

/** Throws Prisma's P2025 when there is no such row. */
export async function deleteTest(tx: Db, urn: string): Promise<void> {
  await tx.metadataTest.delete({ where: { urn } });
}

/**
 * Tests whose name, category or description contains `query` (any case; all without one), oldest first, and how many
 * match in all: both in one transaction.
 */
export async function testPage(
  prisma: PrismaClient,
  query: string | undefined,
  skip: number,
  take: number,
): Promise<{ total: number; rows: MetadataTest[] }> {
  const where: Prisma.MetadataTestWhereInput = query
    ? {
        OR: [
          { name: { contains: likeLiteral(query), mode: "insensitive" } },
          { category: { contains: likeLiteral(query), mode: "insensitive" } },
          { description: { contains: likeLiteral(query), mode: "insensitive" } },
        ],
      }
    : {};
  const [total, rows] = await prisma.$transaction([
    prisma.metadataTest.count({ where }),
    prisma.metadataTest.findMany({ where, orderBy: [{ createdAt: "asc" }, { urn: "asc" }], skip, take }),
  ]);
  return { total, rows };
}

/** Of these tests, those that exist and whose on.types select `entityType`. */
export function testsSelectingType(db: Db, urns: readonly string[], entityType: string): Promise<MetadataTest[]> {
  return db.metadataTest.findMany({ where: { urn: { in: [...urns] }, onTypes: { has: entityType } } });
}

/** The urns of those tests, through plain pg (the entity reads' path). */
export async function urnsOfTestsSelectingType(
  db: Queryable,
  urns: readonly string[],
  entityType: string,
): Promise<string[]> {
  const { rows } = await db.query<{ urn: string }>(
    "SELECT urn FROM metadata_test WHERE urn = ANY($1::text[]) AND $2 = ANY(on_types)",
    [urns, entityType],
  );
  return rows.map((r) => r.urn);
}

/** The entity types each of these tests selects now (its on.types); a test that does not exist is absent. */
export async function onTypesOfTests(db: Queryable, urns: readonly string[]): Promise<Map<string, string[]>> {
  const { rows } = await db.query<{ urn: string; on_types: string[] }>(
    "SELECT urn, on_types FROM metadata_test WHERE urn = ANY($1::text[])",
    [urns],
  );
  return new Map(rows.map((r) => [r.urn, r.on_types]));
}

/** A test as an evaluation reads it. */
export interface EvaluatedTestRow {
  urn: string;
  onTypes: string[];
  active: boolean;
  /** md5 of the definition's text: equal hashes, equal definitions */
  hash: string;
  definition: unknown;
  ownerUrn: string;
  ownerTokenId: string | null;
  suspended: boolean;
}

/** One test as an evaluation reads it, whatever its state; null when it does not exist. */
export async function findEvaluatedTest(db: Queryable, urn: string): Promise<EvaluatedTestRow | null> {
  const { rows } = await db.query<EvaluatedTestRow>(
    `SELECT urn, on_types AS "onTypes", state = 'ACTIVE' AS active, md5(definition::text) AS hash, definition,
              owner_urn AS "ownerUrn", owner_token_id AS "ownerTokenId", suspended_at IS NOT NULL AS suspended
         FROM metadata_test WHERE urn = $1`,
    [urn],
  );
  return rows[0] ?? null;
}

/**
 * A test that has actions: what they are (as stored, unvalidated), what it selects, whom they act for, and whether it
 * is ACTIVE (an INACTIVE test's actions run only for its owner).
 */
export interface TestActionsRow {
  urn: string;
  on_types: string[];
  owner_urn: string;
  owner_token_id: string | null;
  suspended: boolean;
  active: boolean;
  actions: unknown;
}

/** Of these tests, those that exist and have actions. */
export async function testActionsOf(db: Queryable, urns: readonly string[]): Promise<TestActionsRow[]> {
  const { rows } = await db.query<TestActionsRow>(
    `SELECT urn, on_types, owner_urn, owner_token_id, suspended_at IS NOT NULL AS suspended, state = 'ACTIVE' AS active,
            definition->'actions' AS actions
       FROM metadata_test WHERE urn = ANY($1::text[]) AND definition ? 'actions'`,
    [urns],
  );
  return rows;
}

/** A test that evaluates on change, without its definition: `version` changes with every write of its row. */
export interface OnChangeTestRow extends Omit<EvaluatedTestRow, "definition" | "hash"> {
  /** the row's version (PostgreSQL's xmin: a new one at every update, whoever writes it) */
  version: string;
}

/**
 * The tests that evaluate on change (evaluate_on_change, ACTIVE, not suspended) and select one of `entityTypes` (of
 * one owner, when given): what a change of an entity of those types re-evaluates. Without their definitions, which a
 * consumer reads (testDefinitions) only for a version it has not read before: a pass reads these for every batch.
 */
export async function onChangeTestsSelecting(
  db: Queryable,
  entityTypes: readonly string[],
  ownerUrn?: string,
): Promise<OnChangeTestRow[]> {
  if (entityTypes.length === 0) return [];
  const { rows } = await db.query<OnChangeTestRow>(
    `SELECT urn, on_types AS "onTypes", true AS active, xmin::text AS version,
            owner_urn AS "ownerUrn", owner_token_id AS "ownerTokenId", false AS suspended
       FROM metadata_test
      WHERE evaluate_on_change AND state = 'ACTIVE' AND suspended_at IS NULL AND on_types && $1::text[]
        AND ($2::text IS NULL OR owner_urn = $2)
      ORDER BY urn`,
    [entityTypes, ownerUrn ?? null],
  );
  return rows;
}

/** These tests' definitions, their hashes (as EvaluatedTestRow's) and row versions (as OnChangeTestRow's). */
export async function testDefinitions(
  db: Queryable,
  urns: readonly string[],
): Promise<Array<{ urn: string; version: string; hash: string; definition: unknown }>> {
  if (urns.length === 0) return [];
  const { rows } = await db.query<{ urn: string; version: string; hash: string; definition: unknown }>(
    `SELECT urn, xmin::text AS version, md5(definition::text) AS hash, definition
       FROM metadata_test WHERE urn = ANY($1::text[])`,
    [urns],
  );
  return rows;
}

/** Of these tests, those that evaluate on change (evaluate_on_change, ACTIVE, not suspended), as evaluations read them. */
export async function onChangeTestsNamed(db: Queryable, urns: readonly string[]): Promise<EvaluatedTestRow[]> {
  if (urns.length === 0) return [];
  const { rows } = await db.query<EvaluatedTestRow>(
    `SELECT urn, on_types AS "onTypes", true AS active, md5(definition::text) AS hash, definition,
            owner_urn AS "ownerUrn", owner_token_id AS "ownerTokenId", false AS suspended
       FROM metadata_test
      WHERE urn = ANY($1::text[]) AND evaluate_on_change AND state = 'ACTIVE' AND suspended_at IS NULL
      ORDER BY urn`,
    [urns],
  );
  return rows;
}
