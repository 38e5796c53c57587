import { DEFINITION_LIMITS } from "./definition-limits";
import { cachedPathChars, resolvePath } from "./property-path";

/** A property at both limits: 32 segments, 512 characters. */
function longestPath(variant: number): string {
  const segments = Array.from({ length: DEFINITION_LIMITS.propertySegments }, (_, i) => `s${variant}_${i}`);
  const path = segments.join(".");
  const padding = DEFINITION_LIMITS.propertyLength - path.length;
  return `${path}${"x".repeat(padding)}`;
}

describe("property path expansion", () => {
  it("evaluates a path at the limits across thousands of list elements quickly", () => {
    const path = `schemaMetadata.fields.${longestPath(0).split(".").slice(2).join(".")}`;
    const fields = Array.from({ length: 10_000 }, (_, i) => ({ fieldPath: `f${i}` }));
    const started = performance.now();
    expect(resolvePath({ schemaMetadata: { fields } }, path).values).toEqual([]);
    // Guards against expansion growing with more than the input; the bound leaves room for a loaded machine (0.6 s seen).
    expect(performance.now() - started).toBeLessThan(5_000);
  });

  it("still reads map keys that contain dots", () => {
    const aspects = { datasetProperties: { customProperties: { "spark.app.name": "etl" } } };
    expect(resolvePath(aspects, "datasetProperties.customProperties.spark.app.name").values).toEqual(["etl"]);
  });

  it("bounds the path cache by the characters it holds, not by how many paths", () => {
    // Hundreds of distinct paths at the limits: each expands to tens of thousands of key characters.
    const started = performance.now();
    for (let variant = 0; variant < 300; variant++) resolvePath({}, longestPath(variant));
    expect(cachedPathChars()).toBeLessThanOrEqual(1 << 20);
    expect(cachedPathChars()).toBeGreaterThan(0);
    expect(performance.now() - started).toBeLessThan(2000);
  });
});
