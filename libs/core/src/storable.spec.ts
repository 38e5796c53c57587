import { requireLength, refuseUnstorable } from "./storable";

describe("refuseUnstorable", () => {
  it("names the path of the first string holding a NUL, in objects and arrays", () => {
    expect(() => refuseUnstorable({ proposals: [{ ok: "a" }, { aspect: { value: "a\u0000b" } }] }, "")).toThrow(
      "proposals[1].aspect.value contains the character U+0000 (NUL), which cannot be stored",
    );
  });

  it("checks keys too", () => {
    expect(() => refuseUnstorable({ ["k\u0000"]: 1 }, "value")).toThrow("value.k\u0000 contains the character U+0000");
  });

  it("refuses an unpaired surrogate, high or low, which is no Unicode character", () => {
    expect(() => refuseUnstorable({ description: "x\ud800y" }, "value")).toThrow(
      "value.description contains an unpaired surrogate U+D800 (not a Unicode character), which cannot be stored",
    );
    expect(() => refuseUnstorable(["\udc00"], "tags")).toThrow("tags[0] contains an unpaired surrogate U+DC00");
  });

  it("refuses nesting deeper than 1000 levels, naming where, however deep it goes", () => {
    const nested = (levels: number) => {
      let value: unknown = "leaf";
      for (let i = 0; i < levels; i++) value = i % 2 ? { a: value } : [value];
      return value;
    };
    // The body's own object is the first level.
    expect(() => refuseUnstorable({ proposals: nested(999) }, "")).not.toThrow();
    expect(() => refuseUnstorable({ proposals: nested(1000) }, "")).toThrow(
      /^proposals(\.a\[0\]){22}\.… contains more than 1000 levels of nesting, which cannot be stored$/,
    );
    // Deep enough to exhaust the stack of a walk with no limit.
    expect(() => refuseUnstorable(nested(200_000), "value")).toThrow("contains more than 1000 levels of nesting");
  });

  it("lets everything else through: other control characters, and surrogates in pairs (emoji)", () => {
    expect(() =>
      refuseUnstorable({ a: ["tab\there", 1, null, true, { b: "line\nbreak", c: "😀 \ud83d\ude00" }] }, ""),
    ).not.toThrow();
  });
});

describe("requireLength", () => {
  it("counts characters as PostgreSQL does, not UTF-16 units: an emoji is one", () => {
    expect(() => requireLength("input.name", "😀".repeat(256), { min: 1, max: 256 })).not.toThrow();
    expect(() => requireLength("input.name", "😀".repeat(257), { min: 1, max: 256 })).toThrow(
      "input.name must be 1 to 256 characters long",
    );
  });

  it("names the field and its bounds", () => {
    expect(() => requireLength("input.name", "", { min: 1, max: 256 })).toThrow(
      "input.name must be 1 to 256 characters long",
    );
    expect(() => requireLength("input.description", "x".repeat(2001), { max: 2000 })).toThrow(
      "input.description must be at most 2000 characters long",
    );
  });
});
