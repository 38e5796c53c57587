import { EntityRegistry } from "./entity-registry";

describe("EntityRegistry.fromYaml", () => {
  it("refuses two time-series aspects whose rows would share one table, naming both", () => {
    const yaml = `
entities:
  ab:
    aspects: [status]
    timeseriesAspects: [c_usage]
  ab_c:
    aspects: [status]
    timeseriesAspects: [usage]
`;
    expect(() => EntityRegistry.fromYaml(yaml, "custom.yaml")).toThrow(
      "Entity registry custom.yaml: time-series aspects ab.c_usage and ab_c.usage would be stored in one table " +
        "(their names joined with '_' are alike); rename one of them",
    );
  });

  it("accepts versioned aspects whose names join alike: they have no table of their own", () => {
    const yaml = `
entities:
  ab:
    aspects: [c_usage]
  ab_c:
    aspects: [usage]
    timeseriesAspects: [profile]
`;
    expect(EntityRegistry.fromYaml(yaml, "custom.yaml").entityTypes()).toEqual(["ab", "ab_c"]);
  });

  it("loads the built-in registry", () => {
    expect(EntityRegistry.load().entityTypes()).toContain("dataset");
  });
});
