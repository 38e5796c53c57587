import { MAX_URN_BYTES, parseUrn, parseUrnField, urlEncodedBytes } from "./urn";

describe("parseUrn", () => {
  it("parses a user urn", () => {
    expect(parseUrn("urn:li:corpuser:datahub")).toEqual({
      namespace: "li",
      entityType: "corpuser",
      id: "datahub",
      idParts: ["datahub"],
    });
  });

  it("keeps colons inside a plain id", () => {
    expect(parseUrn("urn:li:test:my:test").id).toBe("my:test");
  });

  it("parses a tuple id whose parts are urns with colons and parentheses", () => {
    const urn = parseUrn("urn:li:dataset:(urn:li:dataPlatform:hive,db.table,PROD)");
    expect(urn.entityType).toBe("dataset");
    expect(urn.idParts).toEqual(["urn:li:dataPlatform:hive", "db.table", "PROD"]);
  });

  it("parses nested tuples", () => {
    const urn = parseUrn("urn:li:dataJob:(urn:li:dataFlow:(airflow,dag,PROD),task)");
    expect(urn.idParts).toEqual(["urn:li:dataFlow:(airflow,dag,PROD)", "task"]);
  });

  it.each([
    ["not-a-urn", "must start with 'urn:'"],
    ["urn:li:corpuser:", "missing id"],
    ["urn:li:corpuser", "missing entity type"],
    ["urn::corpuser:x", "missing namespace"],
    ["urn:li:dataset:(a,b", "tuple id must end with ')'"],
    ["urn:li:dataset:(a,,b)", "empty tuple element"],
    ["urn:li:dataset:a)b", "unbalanced parentheses in id"],
    ["urn:li:9bad:x", "invalid entity type '9bad'"],
    ["urn:li:dataset:a\u0000b", "contains a control character"],
    ["urn:li:corpuser:bob\n", "contains a control character"],
    ["urn:li:dataset:x\ud800", "contains an unpaired surrogate, which is no character"],
  ])("refuses %s", (value, reason) => {
    expect(() => parseUrn(value)).toThrow(reason);
  });

  it("names the field and the value in the input error", () => {
    expect(() => parseUrnField("input.actorUrn", "bob")).toThrow(
      "Invalid urn in 'input.actorUrn': 'bob' (must start with 'urn:')",
    );
  });

  it("refuses a urn of another entity type when one is expected", () => {
    expect(() => parseUrnField("actorUrn", "urn:li:dataset:x", "corpuser")).toThrow("is not a corpuser urn");
  });

  it(`refuses a urn longer than ${MAX_URN_BYTES} bytes URL-encoded, as DataHub does, and shows only its start`, () => {
    const fits = `urn:li:corpuser:${"a".repeat(MAX_URN_BYTES - 22)}`;
    expect(urlEncodedBytes(fits)).toBe(MAX_URN_BYTES); // "urn:li:corpuser:": 13 letters and 3 colons of 3 bytes
    expect(() => parseUrn(fits)).not.toThrow();
    expect(() => parseUrn(`${fits}a`)).toThrow(`longer than the limit of ${MAX_URN_BYTES} bytes URL-encoded`);
    expect(() => parseUrnField("urn", `urn:li:corpuser:${"a".repeat(100_000)}`)).toThrow(
      /^Invalid urn in 'urn': 'urn:li:corpuser:a{84}…' \(longer/,
    );
  });

  it("counts bytes as java.net.URLEncoder writes them", () => {
    expect(urlEncodedBytes("aZ09.-*_ ")).toBe(9);
    expect(urlEncodedBytes(":(),/")).toBe(15);
    expect(urlEncodedBytes("é€😀")).toBe(6 + 9 + 12);
  });
});
