import { randomUUID } from "node:crypto";
import {
  conflict,
  notFound,
  parseUrnField,
  requireLength,
  urnOfNewId,
  type Config,
  type EntityRegistry,
} from "@mdp/core";
import {
  notFoundWhenMissing,
  isUniqueViolation,
  likeLiteral,
  type MetadataTest,
  type Prisma,
  type PrismaClient,
  type TestState,
} from "@mdp/db";
import { readTestResults, type FailedRule } from "@mdp/metadata-tests";
import type { Actor } from "../auth/actor";
import { recordAudit } from "../audit/audit.service";
import { pageOf } from "../graphql/paging";
import type { PolicyEngine } from "../policies/policy-engine";
import { acceptDefinition } from "./test-definition";

/** DataHub's UpdateTestInput; CreateTestInput adds `id`. `state` is ours: INACTIVE tests do not run unless named. */
export interface TestInput {
  name: string;
  category: string;
  description?: string | null;
  definition: { json: string };
  state?: TestState | null;
}

export interface CreateTestInput extends TestInput {
  id?: string | null;
}

export interface ListTestsInput {
  start?: number | null;
  count?: number | null;
  query?: string | null;
}

/** An entity's stored results, each with its test (tests deleted since are left out). */
export interface TestResultsView {
  passing: Array<{ test: MetadataTest; type: "SUCCESS" }>;
  failing: Array<{ test: MetadataTest; type: "FAILURE"; failedRules: FailedRule[] }>;
}

const TEST_RESULTS_ASPECT = "testResults";

/**
 * Metadata-test definitions (CONTRACT.md "Metadata tests (GraphQL)"): changes need MANAGE_TESTS and are audited in
 * their own transaction; reads need VIEW_TESTS. There is no cache of tests anywhere: the evaluation worker reads them
 * from PostgreSQL for every evaluation, so a change here is what the very next evaluation uses.
 */
export class MetadataTestService {
  constructor(
    private readonly prisma: PrismaClient,
    private readonly engine: PolicyEngine,
    private readonly registry: EntityRegistry,
    private readonly config: Pick<Config, "URN_NAMESPACE">,
  ) {}

  async create(actor: Actor, input: CreateTestInput): Promise<string> {
    await this.engine.require(actor, "MANAGE_TESTS", "create metadata tests");
    const urn = urnOfNewId("input.id", input.id, {
      namespace: this.config.URN_NAMESPACE,
      entityType: "test",
      generate: randomUUID,
    });
    const data = this.validate(input);
    try {
      await this.prisma.$transaction(async (tx) => {
        await tx.metadataTest.create({ data: { urn, ...data, state: data.state ?? "ACTIVE", createdBy: actor.urn } });
        await recordAudit(tx, actor, "test.create", urn, auditDetails(data));
      });
    } catch (error) {
      if (isUniqueViolation(error)) throw conflict(`Test ${urn} already exists`);
      throw error;
    }
    return urn;
  }

  async update(actor: Actor, urn: string, input: TestInput): Promise<string> {
    await this.engine.require(actor, "MANAGE_TESTS", "update metadata tests");
    parseUrnField("urn", urn, "test");
    const data = this.validate(input);
    await this.prisma
      .$transaction(async (tx) => {
        await this.existing(tx, urn);
        // An omitted state leaves the test as it is, so DataHub's clients (which know no state) cannot re-activate it.
        const { state, ...rest } = data;
        await tx.metadataTest.update({ where: { urn }, data: state ? { ...rest, state } : rest });
        await recordAudit(tx, actor, "test.update", urn, auditDetails(data));
      })
      .catch(notFoundWhenMissing(`Test ${urn} does not exist`));
    return urn;
  }

  async delete(actor: Actor, urn: string): Promise<boolean> {
    await this.engine.require(actor, "MANAGE_TESTS", "delete metadata tests");
    parseUrnField("urn", urn, "test");
    await this.prisma
      .$transaction(async (tx) => {
        const test = await this.existing(tx, urn);
        await tx.metadataTest.delete({ where: { urn } });
        await recordAudit(tx, actor, "test.delete", urn, { name: test.name });
      })
      .catch(notFoundWhenMissing(`Test ${urn} does not exist`));
    return true;
  }

  async get(actor: Actor, urn: string): Promise<MetadataTest | null> {
    await this.engine.require(actor, "VIEW_TESTS", "view metadata tests");
    parseUrnField("urn", urn, "test");
    return this.prisma.metadataTest.findUnique({ where: { urn } });
  }

  /** Oldest first; `query` matches name, category or description, ignoring case. */
  async list(actor: Actor, input: ListTestsInput) {
    await this.engine.require(actor, "VIEW_TESTS", "list metadata tests");
    const { start, count } = pageOf(input);
    const query = input.query?.trim();
    const where: Prisma.MetadataTestWhereInput = query
      ? {
          OR: [
            { name: { contains: likeLiteral(query), mode: "insensitive" } },
            { category: { contains: likeLiteral(query), mode: "insensitive" } },
            { description: { contains: likeLiteral(query), mode: "insensitive" } },
          ],
        }
      : {};
    const [total, tests] = await this.prisma.$transaction([
      this.prisma.metadataTest.count({ where }),
      this.prisma.metadataTest.findMany({
        where,
        orderBy: [{ createdAt: "asc" }, { urn: "asc" }],
        skip: start,
        take: count,
      }),
    ]);
    return { start, count: tests.length, total, tests };
  }

  /**
   * The entity's `testResults` aspect with each result's test; null when no result was ever pushed for it.
   * NOT_FOUND when nothing at all is stored for the entity.
   */
  async results(actor: Actor, entityUrn: string): Promise<TestResultsView | null> {
    await this.engine.require(actor, "VIEW_TESTS", "view metadata test results");
    parseUrnField("urn", entityUrn);
    const [row] = await this.prisma.$queryRaw<Array<{ entity_type: string | null; value: unknown }>>`
      SELECT (SELECT entity_type FROM aspect WHERE urn = ${entityUrn} LIMIT 1) AS entity_type,
             (SELECT value FROM aspect WHERE urn = ${entityUrn} AND aspect_name = ${TEST_RESULTS_ASPECT}
               ORDER BY version DESC LIMIT 1) AS value`;
    const entityType = row?.entity_type;
    if (!entityType) throw notFound(`Entity ${entityUrn} does not exist`);
    if (row.value === null || row.value === undefined) return null;
    const stored = readTestResults(row.value);
    const urns = [...stored.passing, ...stored.failing].map((r) => r.test);
    // As the next push will: results of tests deleted, or edited away from this entity's type, are not shown.
    const tests = new Map(
      (await this.prisma.metadataTest.findMany({ where: { urn: { in: urns }, onTypes: { has: entityType } } })).map(
        (t) => [t.urn, t],
      ),
    );
    return {
      passing: stored.passing.flatMap((r) => {
        const test = tests.get(r.test);
        return test ? [{ test, type: "SUCCESS" as const }] : [];
      }),
      failing: stored.failing.flatMap((r) => {
        const test = tests.get(r.test);
        return test ? [{ test, type: "FAILURE" as const, failedRules: r.failedRules ?? [] }] : [];
      }),
    };
  }

  private validate(input: TestInput) {
    const name = input.name.trim();
    requireLength("input.name", name, { min: 1, max: 256 });
    const category = input.category.trim();
    requireLength("input.category", category, { min: 1, max: 256 });
    requireLength("input.description", input.description ?? "", { max: 2000 });
    const accepted = acceptDefinition(input.definition.json, this.registry);
    return {
      name,
      category,
      description: input.description ?? null,
      definitionText: accepted.definitionText,
      definition: accepted.definition as unknown as Prisma.InputJsonObject,
      onTypes: accepted.onTypes,
      state: input.state ?? undefined,
    };
  }

  private async existing(tx: Prisma.TransactionClient, urn: string): Promise<MetadataTest> {
    const test = await tx.metadataTest.findUnique({ where: { urn } });
    if (!test) throw notFound(`Test ${urn} does not exist`);
    return test;
  }
}

function auditDetails(data: { name: string; category: string; onTypes: string[]; state?: TestState }) {
  return { name: data.name, category: data.category, onTypes: data.onTypes, ...(data.state && { state: data.state }) };
}
