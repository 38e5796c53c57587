import { eventually } from "./testing";

describe("eventually", () => {
  it("answers the first value the condition accepts, as soon as it holds", async () => {
    let calls = 0;
    const started = Date.now();
    const value = await eventually("the third call", () => (++calls >= 3 ? calls : undefined));
    expect(value).toBe(3);
    expect(Date.now() - started).toBeLessThan(1_000);
  });

  it("asks again after a throw, and names what it waited for with the last answer when time runs out", async () => {
    let calls = 0;
    await expect(
      eventually(
        "a state of done",
        () => {
          if (++calls === 1) throw new Error("not there yet");
          return { state: "active" };
        },
        { timeoutMs: 100, until: (v) => v.state === "done" },
      ),
    ).rejects.toThrow('a state of done: not so within 100 ms (last seen: {"state":"active"})');
    expect(calls).toBeGreaterThan(1);
  });
});
