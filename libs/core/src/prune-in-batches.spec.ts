import { pruneInBatches } from "./prune-in-batches";

describe("pruneInBatches", () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  it("stops at the first short batch: caught up", async () => {
    const fn = jest
      .fn<Promise<number>, [number]>()
      .mockResolvedValueOnce(10)
      .mockResolvedValueOnce(10)
      .mockResolvedValue(3);
    await expect(pruneInBatches(fn, { budgetMs: 60_000, batch: 10 })).resolves.toBe(23);
    expect(fn).toHaveBeenCalledTimes(3);
    expect(fn).toHaveBeenCalledWith(10);
  });

  it("stops once the budget is spent, however much is left", async () => {
    // every statement takes a full batch and 400 ms: a 1 s budget is spent after the third
    const fn = jest.fn(async (batch: number) => {
      jest.advanceTimersByTime(400);
      return batch;
    });
    await expect(pruneInBatches(fn, { budgetMs: 1_000, batch: 5 })).resolves.toBe(15);
    expect(fn).toHaveBeenCalledTimes(3);
  });

  it("runs one statement even with no budget left", async () => {
    const fn = jest.fn(async (batch: number) => batch);
    await expect(pruneInBatches(fn, { budgetMs: 0, batch: 5 })).resolves.toBe(5);
    expect(fn).toHaveBeenCalledTimes(1);
  });

  it("passes a statement's error on, with no statement after it", async () => {
    const fn = jest
      .fn<Promise<number>, [number]>()
      .mockResolvedValueOnce(10)
      .mockRejectedValueOnce(new Error("connection refused"))
      .mockResolvedValue(0);
    await expect(pruneInBatches(fn, { budgetMs: 60_000, batch: 10 })).rejects.toThrow("connection refused");
    expect(fn).toHaveBeenCalledTimes(2);
  });
});
