import { AUDIT_LIMITS, boundAuditDetails, boundAuditEvent } from "./audit";

describe("boundAuditEvent", () => {
  it("keeps what is within the limits as it is", () => {
    const event = {
      actorUrn: "urn:li:corpuser:ann",
      action: "policy.create",
      targetUrn: "urn:li:dataHubPolicy:1",
      details: { name: "x", users: ["urn:li:corpuser:bob"], n: 3, on: true, none: null, nested: { a: ["b"] } },
    };
    expect(boundAuditEvent(event)).toEqual(event);
  });

  it("cuts a long string, saying from how long, and replaces what PostgreSQL cannot store", () => {
    const long = "é".repeat(AUDIT_LIMITS.stringChars + 5);
    const { targetUrn, details } = boundAuditEvent({
      actorUrn: "urn:li:corpuser:ann",
      action: "x",
      targetUrn: long,
      details: { text: "a\u0000b\ud800c\udc00d\ud83d\ude00" },
    });
    expect(targetUrn).toBe(
      `${"é".repeat(AUDIT_LIMITS.stringChars)}… (cut from ${AUDIT_LIMITS.stringChars + 5} characters)`,
    );
    expect(details.text).toBe("a\uFFFDb\uFFFDc\uFFFDd\ud83d\ude00"); // a whole pair stays
  });

  it("never cuts a surrogate pair in half", () => {
    const text = `${"a".repeat(AUDIT_LIMITS.stringChars - 1)}\ud83d\ude00tail`;
    const cut = boundAuditDetails({ text }).text as string;
    expect(cut.startsWith(`${"a".repeat(AUDIT_LIMITS.stringChars - 1)}\uFFFD…`)).toBe(true);
  });

  it("bounds the details as a whole, marking how many entries and fields were left off", () => {
    const item = "x".repeat(1000);
    const details = boundAuditDetails({ list: Array.from({ length: 100 }, () => item), after: "gone" });
    const list = details.list as string[];
    expect(list.length).toBeLessThan(40);
    expect(list.at(-1)).toBe(`… (${100 - list.length + 1} more)`);
    expect(details["…"]).toBe("1 more fields");
    expect(JSON.stringify(details).length).toBeLessThan(AUDIT_LIMITS.detailsChars + 2 * AUDIT_LIMITS.stringChars);
  });

  it("replaces nesting past the limit", () => {
    let deep: unknown = "bottom";
    for (let i = 0; i < 20; i++) deep = { d: deep };
    let walked = boundAuditDetails({ deep }) as Record<string, unknown>;
    let levels = 0;
    while (typeof walked === "object") {
      walked = (walked.deep ?? walked.d) as Record<string, unknown>;
      levels++;
    }
    expect(walked).toBe("… (nested too deep)");
    expect(levels).toBe(AUDIT_LIMITS.depth);
  });
});
