/**
 * A deleted test leaves nothing a reader sees, and costs no writes (real gateway, real evaluation worker, PostgreSQL
 * and Redis): its entries are hidden on every read at once, and a later push of other tests writes a new testResults
 * version only for an entity whose pushed tests' results changed, never one per entity the deleted test had touched.
 */
import { startEvaluationWorker, type RunningWorker } from "./support/evaluation-worker";
import { ROOT, describeDatasets, startGateway, systemClientHeaders, type Harness } from "./support/gateway-harness";

const asRoot = systemClientHeaders(ROOT);
const datasets = Array.from({ length: 20 }, (_, i) => `urn:li:dataset:(urn:li:dataPlatform:hive,db.kept${i},PROD)`);
const definition = (rules: unknown) => ({ json: JSON.stringify({ on: { types: ["dataset"] }, rules }) });

describe("a deleted test's results", () => {
  let h: Harness;
  let worker: RunningWorker;

  const gql = async (query: string, variables: Record<string, unknown>) => {
    const body = (await h.graphql(query, variables, asRoot)).body;
    if (body.errors) throw new Error(JSON.stringify(body.errors));
    return body.data!;
  };
  const createTest = (id: string, rules: unknown) =>
    gql(`mutation($input: CreateTestInput!) { createTest(input: $input) }`, {
      input: { id, name: id, category: "Quality", definition: definition(rules), evaluateOnChange: false },
    });
  const push = async (testUrns: string[]) => {
    const res = await h.post("/gms/test?action=batchEvaluate", { urns: datasets, testUrns, push: true }, asRoot);
    expect(res.status).toBe(200);
  };
  const versions = async () =>
    Number(
      (
        await h.database.pool.query<{ n: string }>(
          "SELECT count(*) AS n FROM aspect WHERE aspect_name = 'testResults' AND urn = ANY($1)",
          [datasets],
        )
      ).rows[0]!.n,
    );

  beforeAll(async () => {
    h = await startGateway();
    worker = await startEvaluationWorker(h);
    await describeDatasets(h, datasets, "kept");
    await createTest("kept", { property: "datasetProperties.description", operator: "exists" });
    await createTest("gone", { property: "datasetProperties.description", operator: "contains_str", value: "k" });
  });
  afterAll(async () => {
    await worker?.close();
    await h?.close();
  });

  it("is hidden from readers at once, and an unrelated push rewrites no entity for it", async () => {
    await push(["urn:li:test:kept", "urn:li:test:gone"]);
    const before = await versions();
    expect(before).toBe(datasets.length);
    await gql(`mutation($urn: String!) { deleteTest(urn: $urn) }`, { urn: "urn:li:test:gone" });

    const read = await fetch(`${h.baseUrl}/gms/entities/${encodeURIComponent(datasets[0]!)}`, { headers: asRoot });
    const entity = (await read.json()) as { value: { aspects: { testResults: { passing: Array<{ test: string }> } } } };
    expect(entity.value.aspects.testResults.passing.map((r) => r.test)).toEqual(["urn:li:test:kept"]);

    // The same results of the other test again: nothing of the pushed tests changed, so nothing is written (before,
    // each entity got a version that only dropped the deleted test's entry, and an event for each subscriber).
    await push(["urn:li:test:kept"]);
    expect(await versions()).toBe(before);

    // A new test that applies to none of them (its conditions exclude every dataset) writes nothing either.
    await gql(`mutation($input: CreateTestInput!) { createTest(input: $input) }`, {
      input: {
        id: "none",
        name: "none",
        category: "Quality",
        evaluateOnChange: false,
        definition: {
          json: JSON.stringify({
            on: {
              types: ["dataset"],
              conditions: { property: "datasetProperties.description", operator: "equals", value: "elsewhere" },
            },
            rules: { property: "datasetProperties.description", operator: "exists" },
          }),
        },
      },
    });
    await push(["urn:li:test:none"]);
    expect(await versions()).toBe(before);
  });
});
