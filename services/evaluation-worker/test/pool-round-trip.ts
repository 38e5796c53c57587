/**
 * What a round trip through the evaluation threads adds to an evaluation, against the same evaluation on the calling
 * thread. Run: node --max-semi-space-size=64 --require ./scripts/register-ts.cjs \
 *   services/evaluation-worker/test/pool-round-trip.ts
 */
import { definitionFromJson, evaluateEntity } from "@mdp/metadata-tests";
import { EvaluationPool } from "../src/evaluation-pool";

const definition = {
  on: { types: ["dataset"] },
  rules: { property: "datasetProperties.description", operator: "exists" },
};
const tests = [
  {
    urn: "urn:li:test:a",
    onTypes: ["dataset"],
    active: true,
    hash: "h",
    definition,
    ownerUrn: "urn:li:corpuser:a",
    ownerTokenId: null,
    suspended: false,
  },
];
const entity = {
  urn: "urn:li:dataset:(urn:li:dataPlatform:hive,db.x,PROD)",
  entityType: "dataset",
  aspects: { datasetProperties: { description: "x".repeat(200), customProperties: { a: "b" } } },
};

async function main() {
  const pool = new EvaluationPool({ threads: 2, memoryLimitMb: 128, timeLimitMs: 1000, maxQueue: 8 });
  const input = { at: Date.now(), tests, entities: new Map([[entity.urn, entity]]) };
  const started = Date.now();
  await pool.evaluate(input, [{ urns: [entity.urn] }]);
  console.log(`first evaluation (threads loading): ${Date.now() - started} ms`);
  const parsed = { urn: "urn:li:test:a", definition: definitionFromJson(definition) };
  for (let round = 0; round < 3; round++) {
    const n = 2000;
    let s = process.hrtime.bigint();
    for (let i = 0; i < n; i++) await pool.evaluate(input, [{ urns: [entity.urn] }]);
    const pooled = Number(process.hrtime.bigint() - s) / 1e3 / n;
    s = process.hrtime.bigint();
    for (let i = 0; i < n; i++) evaluateEntity([parsed], entity, 1);
    const bare = Number(process.hrtime.bigint() - s) / 1e3 / n;
    console.log(`one request through the pool: ${pooled.toFixed(1)} µs; on this thread: ${bare.toFixed(1)} µs`);
  }
  await pool.close();
}
void main();
