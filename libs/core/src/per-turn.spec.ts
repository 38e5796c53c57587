import { perTurn } from "./per-turn";

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

describe("perTurn", () => {
  it("runs once on the values given in one turn, each caller getting its own result", async () => {
    const runs: number[][] = [];
    const double = perTurn(async (batch: number[]) => {
      runs.push(batch);
      return batch.map((n) => n * 2);
    });
    const answers = Promise.all([double(1), double(2), double(3)]);
    expect(runs).toEqual([]); // nothing before the end of the turn
    await expect(answers).resolves.toEqual([2, 4, 6]);
    await expect(double(4)).resolves.toBe(8); // a later turn is a run of its own
    expect(runs).toEqual([[1, 2, 3], [4]]);
  });

  it("fails every caller of a batch with its run's error, thrown or rejected", async () => {
    const rejecting = perTurn<number, number>(() => Promise.reject(new Error("down")));
    await expect(Promise.allSettled([rejecting(1), rejecting(2)])).resolves.toEqual([
      { status: "rejected", reason: new Error("down") },
      { status: "rejected", reason: new Error("down") },
    ]);
    const throwing = perTurn<number, number>(() => {
      throw new Error("bug");
    });
    await expect(throwing(1)).rejects.toThrow("bug");
  });

  it("with keyOf, runs each key's values apart, in the order the keys came, failing apart", async () => {
    const runs: string[][] = [];
    const echo = perTurn(
      async (batch: string[]) => {
        runs.push(batch);
        if (batch[0]!.startsWith("bad")) throw new Error("refused");
        return batch.map((value) => value.toUpperCase());
      },
      (value) => value.split(":")[0]!,
    );
    const answers = Promise.allSettled([echo("b:1"), echo("a:1"), echo("bad:1"), echo("b:2")]);
    await nextTurn();
    expect(runs).toEqual([["b:1", "b:2"], ["a:1"], ["bad:1"]]);
    expect((await answers).map((a) => (a.status === "fulfilled" ? a.value : String(a.reason)))).toEqual([
      "B:1",
      "A:1",
      "Error: refused",
      "B:2",
    ]);
  });
});
