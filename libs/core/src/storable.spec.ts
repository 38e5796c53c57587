import { refuseNul } from "./storable";

describe("refuseNul", () => {
  it("names the path of the first string holding a NUL, in objects and arrays", () => {
    expect(() => refuseNul({ proposals: [{ ok: "a" }, { aspect: { value: "a\u0000b" } }] }, "")).toThrow(
      "proposals[1].aspect.value contains the character U+0000 (NUL), which cannot be stored",
    );
  });

  it("checks keys too", () => {
    expect(() => refuseNul({ ["k\u0000"]: 1 }, "value")).toThrow("value.k\u0000 contains the character U+0000");
  });

  it("lets everything else through, other control characters included", () => {
    expect(() => refuseNul({ a: ["tab\there", 1, null, true, { b: "line\nbreak" }] }, "")).not.toThrow();
  });
});
