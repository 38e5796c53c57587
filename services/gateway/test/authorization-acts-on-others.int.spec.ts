/**
 * The authorization matrix's seventh principal (docs/authorization.md; the six others are in
 * authorization-every-operation.int.spec.ts): it acts on an object another user owns (ACTS_ON_OTHERS, in
 * support/every-operation/). It holds only what the operation needs, the object's owner holds everything the object's
 * work could use, and what the call produces (a token, a task, a push's writes, an owner) must be bounded by the
 * caller, or the call refused. Every mutation and HTTP action that takes an object's id must have such a row.
 */
import { bearer, createToken, type Harness } from "./support/gateway-harness";
import { ACTS_ON_OTHERS, objectIdOperations } from "./support/every-operation/acts-on-others";
import { startMatrix, type Matrix } from "./support/every-operation/matrix-harness";
import {
  OWNER,
  OWNER_HOLDS,
  type OthersContext,
  type OthersRow,
  type Token,
} from "./support/every-operation/others-context";
import { testInput } from "./support/every-operation/principals";

describe("authorization matrix: a caller acting on an object another user owns", () => {
  let m: Matrix;
  let h: Harness;
  const grantPolicy = (user: string, privileges: string[]) => m.grantPolicy(user, privileges);

  beforeAll(async () => {
    m = await startMatrix();
    h = m.h;
    // The rows on another user's truncation start one as its owner: with the matrix's own truncation still waiting
    // (no truncation worker runs), the same request would get that task back instead of a new one.
    const cancelled = await h.post("/gms/operations?action=cancelTask", { taskId: m.fixtures.truncationTask });
    expect(cancelled.status).toBe(200);
  });
  afterAll(async () => {
    await m?.close();
  });

  let ownerToken: Token;
  let entities = 0;
  const context = async (index: number, row: OthersRow): Promise<OthersContext> => {
    ownerToken ??= await (async () => {
      await grantPolicy(OWNER, OWNER_HOLDS);
      return createToken(h, OWNER);
    })();
    const urn = `urn:li:corpuser:matrix-acts-${index}`;
    if (row.holds.length > 0) await grantPolicy(urn, row.holds);
    const token = await createToken(h, urn);
    const gql: OthersContext["gql"] = async (query, variables, headers) => {
      const res = await h.graphql(query, variables, headers);
      const error = res.body.errors?.[0];
      const code = error?.extensions?.code;
      const outcome = !error
        ? "ok"
        : code === "FORBIDDEN" || code === "UNAUTHENTICATED"
          ? code
          : code === "BAD_USER_INPUT"
            ? "BAD_REQUEST"
            : "other";
      return { outcome, detail: error ? `${code}: ${error.message}` : "ok", data: res.body.data };
    };
    return {
      h,
      caller: { urn, headers: bearer(token.token), token },
      owner: { urn: OWNER, headers: bearer(ownerToken.token) },
      ownerToken,
      gql,
      async ownersTest(input = {}, headers = bearer(ownerToken.token)) {
        const res = await gql(
          `mutation($i: CreateTestInput!) { createTest(input: $i) }`,
          { i: { ...testInput(), evaluateOnChange: false, ...input } },
          headers,
        );
        if (!res.data?.createTest) throw new Error(res.detail);
        return res.data.createTest as string;
      },
      async freshEntity() {
        const entity = `urn:li:dataset:(urn:li:dataPlatform:hive,db.acted_on_${index}_${++entities},PROD)`;
        const ingested = await h.post("/gms/aspects?action=ingestProposal", {
          proposal: {
            entityType: "dataset",
            entityUrn: entity,
            aspectName: "datasetProperties",
            changeType: "UPSERT",
            aspect: { contentType: "application/json", value: JSON.stringify({ description: "acted on" }) },
          },
        });
        expect(ingested.status).toBe(200);
        return entity;
      },
      async tagsOf(entity) {
        const row = await h.prisma.aspect.findFirst({
          where: { urn: entity, aspectName: "globalTags" },
          orderBy: { version: "desc" },
        });
        return ((row?.value as { tags?: Array<{ tag: string }> } | undefined)?.tags ?? []).map((t) => t.tag);
      },
    };
  };

  it("has a row for every mutation and HTTP action that takes an object's id", async () => {
    const rows = [...new Set(ACTS_ON_OTHERS.map((r) => r.operation))].sort();
    const operations = await objectIdOperations();
    expect({
      missing: operations.filter((o) => !rows.includes(o)),
      unknown: rows.filter((o) => !operations.includes(o)),
    }).toEqual({ missing: [], unknown: [] });
  });

  it.each(ACTS_ON_OTHERS.map((r, index) => [`${r.operation} (${r.use})`, index, r] as const))(
    "%s",
    async (_name, index, row) => {
      await row.run(await context(index, row));
    },
  );
});
