import { MAX_TOKEN_SCOPES, parseScopes, withImplied, withinScopes } from "./privileges";

describe("token scopes", () => {
  it("parses names ours or DataHub's, once each, sorted", () => {
    expect(
      parseScopes("s", ["VIEW_TESTS", "GET_ENTITY_PRIVILEGE", "GET_ENTITY", "GET_ES_TASK_STATUS_PRIVILEGE"]),
    ).toEqual(["GET_ENTITY", "GET_TASK_STATUS", "VIEW_TESTS"]);
  });

  it.each([
    [[], "s must name at least one privilege"],
    [["GET_ENTITY", "get_entity"], "s[1] 'get_entity' is not a privilege"],
    [Array.from({ length: MAX_TOKEN_SCOPES + 1 }, () => "GET_ENTITY"), `the limit is ${MAX_TOKEN_SCOPES}`],
  ])("refuses %j", (names, message) => {
    expect(() => parseScopes("s", names)).toThrow(message);
  });

  it("a scoped request holds its scopes and what they imply, only where its user holds them", () => {
    const held = withImplied(["MANAGE_SYSTEM_OPERATIONS", "VIEW_TESTS"]);
    expect([...withinScopes(held, ["MANAGE_SYSTEM_OPERATIONS", "MANAGE_POLICIES"])].sort()).toEqual([
      "GET_TASK_STATUS",
      "GET_TIMESERIES_INDEX_SIZES",
      "MANAGE_SYSTEM_OPERATIONS",
      "TRUNCATE_TIMESERIES_INDEX",
    ]);
    expect([...withinScopes(held, ["TRUNCATE_TIMESERIES_INDEX"])]).toEqual(["TRUNCATE_TIMESERIES_INDEX"]);
    expect(withinScopes(held, [])).toEqual(new Set());
    expect(withinScopes(held, undefined)).toBe(held);
  });
});

describe("implications the edges rely on", () => {
  it("MANAGE_SYSTEM_OPERATIONS implies TRUNCATE_TIMESERIES_INDEX: a retention policy's dry run truncates under it", () => {
    // runRetentionPolicy requires MANAGE_SYSTEM_OPERATIONS and its dry run calls the truncation service, which leaves
    // TRUNCATE_TIMESERIES_INDEX to its edges.
    expect(withImplied(["MANAGE_SYSTEM_OPERATIONS"]).has("TRUNCATE_TIMESERIES_INDEX")).toBe(true);
  });
});
