import { RESULT_LIMITS } from "@mdp/metadata-tests";
import { replyChunks } from "./evaluate.processor";

describe("replyChunks", () => {
  const item = (characters: number) => ({ resultsJson: { "urn:li:dataset:x": "x".repeat(characters) } });

  it("keeps the items of one turn in one reply while they are small", () => {
    const items = [item(10), item(20), {}];
    expect(replyChunks(items)).toEqual([items]);
  });

  it("splits items whose results together pass one answer's size, never splitting an item", () => {
    const big = Math.floor(RESULT_LIMITS.answerBytes * 0.6);
    const items = [item(big), item(big), item(10), item(big)];
    const chunks = replyChunks(items);
    expect(chunks).toEqual([[items[0]], [items[1], items[2]], [items[3]]]);
    for (const chunk of chunks) {
      const size = chunk.reduce((n, i) => n + Object.values(i.resultsJson ?? {}).join("").length, 0);
      expect(size).toBeLessThanOrEqual(RESULT_LIMITS.answerBytes);
    }
  });
});
