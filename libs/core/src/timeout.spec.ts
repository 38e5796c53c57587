import { withTimeout } from "./timeout";

describe("withTimeout", () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  it("answers what the promise answers in time, and leaves no timer behind", async () => {
    await expect(withTimeout(Promise.resolve(7), 1_000)).resolves.toBe(7);
    expect(jest.getTimerCount()).toBe(0);
  });

  it("passes on the promise's own failure", async () => {
    await expect(withTimeout(Promise.reject(new Error("refused")), 1_000)).rejects.toThrow("refused");
    expect(jest.getTimerCount()).toBe(0);
  });

  it("fails with the caller's error once the time is up, however late the promise", async () => {
    const never = new Promise<number>(() => undefined);
    const answer = withTimeout(never, 500, () => new Error("no answer in 500 ms"));
    const outcome = expect(answer).rejects.toThrow("no answer in 500 ms");
    await jest.advanceTimersByTimeAsync(499);
    await jest.advanceTimersByTimeAsync(1);
    await outcome;
  });

  it("names the time in its default error", async () => {
    const answer = withTimeout(new Promise(() => undefined), 250);
    const outcome = expect(answer).rejects.toThrow("timed out after 250 ms");
    await jest.advanceTimersByTimeAsync(250);
    await outcome;
  });
});
