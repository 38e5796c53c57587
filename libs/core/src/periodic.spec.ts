import type { Logger } from "./logger";
import { every, OUTBOX_FOLLOW_WINDOW_MS, outboxConsumerLoop } from "./periodic";

function fakeLogger() {
  const logger = { debug: jest.fn(), info: jest.fn(), warn: jest.fn(), error: jest.fn() };
  return { logger, as: logger as unknown as Logger };
}

/** A promise the test settles when it wants: a run that is "slow" until told otherwise. */
function deferred() {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

describe("every", () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  it("runs every interval, and at once when asked to", async () => {
    const { as } = fakeLogger();
    const fn = jest.fn();
    const loop = every("chore", 1_000, fn, { logger: as, runAtStart: true });
    expect(fn).toHaveBeenCalledTimes(1); // at start, synchronously
    await jest.advanceTimersByTimeAsync(3_000);
    expect(fn).toHaveBeenCalledTimes(4);
    await loop.stop();
  });

  it("does not run at start unless asked", async () => {
    const { as } = fakeLogger();
    const fn = jest.fn();
    const loop = every("chore", 1_000, fn, { logger: as });
    expect(fn).not.toHaveBeenCalled();
    await jest.advanceTimersByTimeAsync(1_000);
    expect(fn).toHaveBeenCalledTimes(1);
    await loop.stop();
  });

  it("never overlaps runs: a slow run skips ticks rather than piling them up", async () => {
    const { as } = fakeLogger();
    const slow = deferred();
    let running = 0;
    let most = 0;
    const fn = jest.fn(async () => {
      running++;
      most = Math.max(most, running);
      await slow.promise;
      running--;
    });
    const loop = every("slow", 100, fn, { logger: as });
    await jest.advanceTimersByTimeAsync(1_000); // ten ticks while the first run hangs
    expect(fn).toHaveBeenCalledTimes(1);
    slow.resolve();
    await jest.advanceTimersByTimeAsync(100);
    expect(fn).toHaveBeenCalledTimes(2); // the next tick after it ended, not the ten it missed
    expect(most).toBe(1);
    await loop.stop();
  });

  it("logs a failing run with the loop's name and goes on", async () => {
    const { logger, as } = fakeLogger();
    const fn = jest.fn().mockRejectedValueOnce(new Error("boom")).mockResolvedValue(undefined);
    const loop = every("flaky", 100, fn, { logger: as });
    await jest.advanceTimersByTimeAsync(100);
    expect(logger.warn).toHaveBeenCalledWith(
      expect.objectContaining({ loop: "flaky", err: expect.objectContaining({ message: "boom" }) }),
      expect.stringContaining("flaky"),
    );
    await jest.advanceTimersByTimeAsync(100);
    expect(fn).toHaveBeenCalledTimes(2);
    await loop.stop();
  });

  it("catches a run that throws synchronously too", async () => {
    const { logger, as } = fakeLogger();
    const loop = every(
      "sync",
      100,
      () => {
        throw new Error("at once");
      },
      { logger: as, runAtStart: true },
    );
    await jest.advanceTimersByTimeAsync(0);
    expect(logger.warn).toHaveBeenCalledWith(expect.objectContaining({ loop: "sync" }), expect.any(String));
    await loop.stop();
  });

  it("logs at debug what a run says it did, and nothing when it says nothing", async () => {
    const { logger, as } = fakeLogger();
    const summaries = [{ deleted: 3 }, undefined];
    const loop = every("prune", 100, () => summaries.shift(), { logger: as });
    await jest.advanceTimersByTimeAsync(200);
    expect(logger.debug).toHaveBeenCalledTimes(1);
    expect(logger.debug).toHaveBeenCalledWith({ loop: "prune", deleted: 3 }, expect.stringContaining("prune"));
    await loop.stop();
  });

  it("stop clears the timer and waits for the run in flight", async () => {
    const { as } = fakeLogger();
    const slow = deferred();
    let finished = false;
    const fn = jest.fn(async () => {
      await slow.promise;
      finished = true;
    });
    const loop = every("drain", 100, fn, { logger: as });
    await jest.advanceTimersByTimeAsync(100);
    let stopped = false;
    const stopping = loop.stop().then(() => (stopped = true));
    await jest.advanceTimersByTimeAsync(1_000);
    expect(stopped).toBe(false); // still waiting on the run
    expect(fn).toHaveBeenCalledTimes(1); // and no new one started
    slow.resolve();
    await stopping;
    expect(finished).toBe(true);
    await jest.advanceTimersByTimeAsync(1_000);
    expect(fn).toHaveBeenCalledTimes(1);
    expect(jest.getTimerCount()).toBe(0);
    await loop.stop(); // again: harmless
  });

  it("unrefs its timer unless told not to", async () => {
    jest.useRealTimers();
    const { as } = fakeLogger();
    const spy = jest.spyOn(global, "setInterval");
    const unrefd = every("a", 60_000, jest.fn(), { logger: as });
    const kept = every("b", 60_000, jest.fn(), { logger: as, unref: false });
    const [first, second] = spy.mock.results.map((r) => r.value as NodeJS.Timeout);
    expect(first?.hasRef()).toBe(false);
    expect(second?.hasRef()).toBe(true);
    spy.mockRestore();
    await Promise.all([unrefd.stop(), kept.stop()]);
  });
});

describe("outboxConsumerLoop", () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  it("looks once per poll while the outbox is idle, with or without following", async () => {
    const { as } = fakeLogger();
    const drain = jest.fn(async () => ({ events: 0 }));
    const loop = outboxConsumerLoop("idle", drain, 200, as, { followMs: 20 });
    await jest.advanceTimersByTimeAsync(2_000);
    expect(drain).toHaveBeenCalledTimes(10);
    await loop.stop();
  });

  it("follows a stream every followMs, and goes back to the poll a window after the last event", async () => {
    const { as } = fakeLogger();
    let events = 5;
    const drain = jest.fn(async () => ({ events }));
    const loop = outboxConsumerLoop("stream", drain, 200, as, { followMs: 20 });
    await jest.advanceTimersByTimeAsync(200); // the first look finds events
    expect(drain).toHaveBeenCalledTimes(1);
    await jest.advanceTimersByTimeAsync(200);
    expect(drain).toHaveBeenCalledTimes(11); // then one every 20 ms
    events = 0;
    await jest.advanceTimersByTimeAsync(OUTBOX_FOLLOW_WINDOW_MS); // the window since the last event runs out
    const afterWindow = drain.mock.calls.length;
    await jest.advanceTimersByTimeAsync(1_000);
    expect(drain.mock.calls.length - afterWindow).toBeLessThanOrEqual(6); // every 200 ms again
    await loop.stop();
  });

  it("stops following once another worker holds the cursor (its drain answers null)", async () => {
    const { as } = fakeLogger();
    let answer: { events: number } | null = { events: 5 };
    const drain = jest.fn(async () => answer);
    const loop = outboxConsumerLoop("held", drain, 200, as, { followMs: 20 });
    await jest.advanceTimersByTimeAsync(200); // found events: following
    answer = null;
    await jest.advanceTimersByTimeAsync(20); // the cursor is taken by another worker
    const calls = drain.mock.calls.length;
    await jest.advanceTimersByTimeAsync(400);
    expect(drain.mock.calls.length - calls).toBe(2); // every 200 ms again, within the follow window
    await loop.stop();
  });

  it("looks at a fixed rate while not following: a slow pass does not push the next look back", async () => {
    const { as } = fakeLogger();
    const drain = jest.fn(async () => {
      await new Promise((resolve) => setTimeout(resolve, 150));
      return { events: 0 };
    });
    const loop = outboxConsumerLoop("slow", drain, 200, as);
    await jest.advanceTimersByTimeAsync(1_000);
    expect(drain).toHaveBeenCalledTimes(5); // at 200, 400, 600, 800, 1000: not every 350
    const stopping = loop.stop();
    await jest.advanceTimersByTimeAsync(150); // the pass in flight ends
    await stopping;
  });

  it("without followMs, a stream is still looked at once per poll (on change's coalescing window)", async () => {
    const { as } = fakeLogger();
    const drain = jest.fn(async () => ({ events: 5 }));
    const loop = outboxConsumerLoop("coalescing", drain, 200, as);
    await jest.advanceTimersByTimeAsync(1_000);
    expect(drain).toHaveBeenCalledTimes(5);
    await loop.stop();
  });

  it("backs off a failing pass, doubling up to 30 s, and logs it with the loop's name", async () => {
    const { logger, as } = fakeLogger();
    const drain = jest.fn(async () => {
      throw new Error("database away");
    });
    const loop = outboxConsumerLoop("down", drain, 200, as, { followMs: 20 });
    await jest.advanceTimersByTimeAsync(200 + 400 + 800);
    expect(drain).toHaveBeenCalledTimes(3); // at 200, then 400 and 800 later
    expect(logger.warn).toHaveBeenCalledWith(
      expect.objectContaining({ loop: "down" }),
      expect.stringContaining("down"),
    );
    await jest.advanceTimersByTimeAsync(10 * 60_000);
    expect(drain.mock.calls.length).toBeLessThan(3 + 25); // at most one look per 30 s once backed off
    await loop.stop();
  });

  it("stop waits for the pass in flight and no look follows it", async () => {
    const { as } = fakeLogger();
    const slow = deferred();
    const drain = jest.fn(async () => {
      await slow.promise;
      return { events: 1 };
    });
    const loop = outboxConsumerLoop("stopping", drain, 100, as, { followMs: 10 });
    await jest.advanceTimersByTimeAsync(100);
    let stopped = false;
    const stopping = loop.stop().then(() => (stopped = true));
    await jest.advanceTimersByTimeAsync(0);
    expect(stopped).toBe(false);
    slow.resolve();
    await stopping;
    await jest.advanceTimersByTimeAsync(1_000);
    expect(drain).toHaveBeenCalledTimes(1);
  });
});
