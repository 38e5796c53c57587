import { parse } from "graphql";
import { DocumentCache, documentHeapBytes } from "./document-cache";

/** A unique document of ~3 KB, values inlined in the text, as the clients of finding 13 sent them. */
const unique = (i: number) =>
  parse(
    `{ ${Array.from({ length: 14 }, (_, j) => `a${j}: listAccessTokens(input: {start: ${i}, count: ${j}}) { total }`).join(" ")} }`,
  );

describe("DocumentCache", () => {
  it("never holds more than its byte budget, however many unique documents arrive, and keeps the recent ones", async () => {
    const cache = new DocumentCache(1024 * 1024);
    for (let i = 0; i < 2000; i++) {
      await cache.set(`k${i}`, unique(i));
      expect(cache.bytes).toBeLessThanOrEqual(cache.maxBytes);
    }
    expect(cache.size).toBeGreaterThan(0);
    expect(cache.size).toBeLessThan(2000);
    expect(await cache.get("k1999")).toBeDefined();
    expect(await cache.get("k0")).toBeUndefined();
  });

  it("estimates at least the heap a document holds (measured 270-430 bytes per token)", () => {
    const document = unique(1);
    let tokens = 0;
    for (let t = document.loc?.startToken ?? null; t; t = t.next) tokens++;
    expect(documentHeapBytes(document)).toBeGreaterThanOrEqual(tokens * 430);
  });

  it("evicts the least recently used first, and does not keep a document larger than the budget", async () => {
    const one = documentHeapBytes(unique(0));
    const cache = new DocumentCache(one * 2 + 10);
    await cache.set("a", unique(0));
    await cache.set("b", unique(1));
    await cache.get("a");
    await cache.set("c", unique(2));
    expect(await cache.get("a")).toBeDefined();
    expect(await cache.get("b")).toBeUndefined();
    const tiny = new DocumentCache(10);
    await tiny.set("x", unique(3));
    expect(tiny.size).toBe(0);
    expect(tiny.bytes).toBe(0);
  });
});
