import { parse } from "graphql";
import { DocumentCache, documentHeapBytes } from "./document-cache";

/** A unique document of ~3 KB, values inlined in the text, as bench/graphql-memory's callers send them. */
const unique = (i: number) =>
  parse(
    `{ ${Array.from({ length: 14 }, (_, j) => `a${j}: listAccessTokens(input: {start: ${i}, count: ${j}}) { total }`).join(" ")} }`,
  );

/** Stores a document twice, as Apollo does for a text requested twice: the second time admits it. */
async function storeRepeated(cache: DocumentCache, key: string, document: ReturnType<typeof unique>): Promise<void> {
  await cache.set(key, document);
  await cache.set(key, document);
}

describe("DocumentCache", () => {
  it("never holds more than its byte budget, however many repeated documents arrive, and keeps the recent ones", async () => {
    const cache = new DocumentCache(1024 * 1024);
    for (let i = 0; i < 2000; i++) {
      await storeRepeated(cache, `k${i}`, unique(i));
      expect(cache.bytes).toBeLessThanOrEqual(cache.maxBytes);
    }
    expect(cache.size).toBeGreaterThan(0);
    expect(cache.size).toBeLessThan(2000);
    expect(await cache.get("k1999")).toBeDefined();
    expect(await cache.get("k0")).toBeUndefined();
  });

  it("does not keep a document stored once, and keeps one from its second time", async () => {
    const cache = new DocumentCache();
    for (let i = 0; i < 100; i++) await cache.set(`once${i}`, unique(i));
    expect(cache.size).toBe(0);
    expect(cache.bytes).toBe(0);
    expect(await cache.get("once0")).toBeUndefined();

    const repeated = unique(1000);
    await cache.set("repeated", repeated);
    expect(await cache.get("repeated")).toBeUndefined();
    await cache.set("repeated", repeated);
    expect(await cache.get("repeated")).toBe(repeated);
    expect(cache.size).toBe(1);
  });

  it("remembers a bounded number of documents seen once: one seen again after that many others is new again", async () => {
    const cache = new DocumentCache(1024 * 1024, 3);
    await cache.set("a", unique(0));
    for (let i = 1; i <= 3; i++) await cache.set(`other${i}`, unique(i));
    await cache.set("a", unique(0)); // "a" was forgotten: this is its first sighting again
    expect(cache.size).toBe(0);
    await cache.set("other3", unique(3)); // still remembered
    expect(await cache.get("other3")).toBeDefined();
    await cache.set("a", unique(0));
    expect(await cache.get("a")).toBeDefined();
  });

  it("keeps repeated documents while one-off documents stream past", async () => {
    const cache = new DocumentCache(documentHeapBytes(unique(0)) * 2 + 10);
    await storeRepeated(cache, "repeated", unique(0));
    for (let i = 1; i < 1000; i++) await cache.set(`once${i}`, unique(i));
    expect(await cache.get("repeated")).toBeDefined();
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
    await storeRepeated(cache, "a", unique(0));
    await storeRepeated(cache, "b", unique(1));
    await cache.get("a");
    await storeRepeated(cache, "c", unique(2));
    expect(await cache.get("a")).toBeDefined();
    expect(await cache.get("b")).toBeUndefined();
    const tiny = new DocumentCache(10);
    await storeRepeated(tiny, "x", unique(3));
    expect(tiny.size).toBe(0);
    expect(tiny.bytes).toBe(0);
  });
});
