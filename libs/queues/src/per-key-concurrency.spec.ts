import { DelayedError, type Job } from "bullmq";
import { KeyedSlots, perKeyConcurrency } from "./per-key-concurrency";
import type { Payload } from "./payloads";

describe("perKeyConcurrency", () => {
  const job = () => ({ moveToDelayed: jest.fn(async () => undefined) }) as unknown as Job;
  const payload = (keys: string[]) => ({ keys }) as unknown as Payload<"evaluate">;

  it("hands a job back once each of its keys holds the limit, and runs another key's meanwhile", async () => {
    const slots = new KeyedSlots();
    const finish: Array<() => void> = [];
    const handler = perKeyConcurrency<"evaluate">(
      () => new Promise<string>((resolve) => finish.push(() => resolve("done"))),
      (p) => (p as unknown as { keys: string[] }).keys,
      2,
      { slots, handBackMs: 50 },
    );
    const running = [handler(payload(["a"]), job(), "t"), handler(payload(["a"]), job(), "t")];
    const refused = job();
    await expect(handler(payload(["a"]), refused, "t")).rejects.toBeInstanceOf(DelayedError);
    expect(refused.moveToDelayed).toHaveBeenCalledWith(expect.any(Number), "t");
    running.push(handler(payload(["b"]), job(), "t"), handler(payload(["a", "c"]), job(), "t"));
    expect([slots.held, slots.heldFor("a"), slots.heldFor("b"), slots.heldFor("c")]).toEqual([4, 3, 1, 1]);
    expect(slots.atLeast(2)).toEqual(["a"]);
    finish.forEach((done) => done());
    await expect(Promise.all(running)).resolves.toEqual(["done", "done", "done", "done"]);
    expect(slots.held).toBe(0);
    expect(slots.atLeast(1)).toEqual([]);
  });

  it("gives a slot back when the handler throws, once however often its release is called", async () => {
    const slots = new KeyedSlots();
    const handler = perKeyConcurrency<"evaluate">(
      async () => {
        throw new Error("boom");
      },
      () => ["a"],
      1,
      { slots, handBackMs: 50 },
    );
    await expect(handler(payload(["a"]), job(), "t")).rejects.toThrow("boom");
    expect(slots.heldFor("a")).toBe(0);
    const release = slots.take(["a", "a"]);
    release();
    release();
    expect([slots.held, slots.heldFor("a")]).toEqual([0, 0]);
  });
});
