import type { DocumentStore } from "@apollo/server";
import type { DocumentNode } from "graphql";

/** Heap a parsed document holds, per lexical token: 270–430 bytes measured over five document shapes (AST, Location
 * and Token objects, which Locations keep alive through their linked list). The upper end is used. */
export const HEAP_BYTES_PER_TOKEN = 430;
/** What the cache of parsed and validated documents may hold, in estimated heap bytes. */
export const DOCUMENT_CACHE_BYTES = 32 * 1024 * 1024;
/**
 * How many keys of documents seen once (and not cached) are remembered, so that a document is cached the second time
 * it is seen within the last this-many first sightings. Keys only: about 1 MB of heap at most.
 */
export const DOCUMENT_CACHE_SEEN_KEYS = 4096;

/**
 * Estimated heap of a parsed document: its tokens (walked through the list the parser links) plus its source text.
 * Apollo's default store sizes a document by its JSON, which leaves out the tokens: a 3.8 KB document of 300 aliased
 * fields measured 560 KB of heap against 135 KB of JSON, so its 30 MiB budget held over 120 MB.
 */
export function documentHeapBytes(document: DocumentNode): number {
  let tokens = 0;
  for (let token = document.loc?.startToken ?? null; token; token = token.next) tokens++;
  return tokens * HEAP_BYTES_PER_TOKEN + 2 * (document.loc?.source.body.length ?? 0);
}

/**
 * Apollo's store of parsed and validated documents (keyed by the query's hash), least recently used first out, bounded
 * by the estimated heap its documents hold rather than by their count: callers that inline values in query texts make
 * every request a new document.
 *
 * A document is admitted the second time it is stored, not the first: Apollo stores every document it parsed and
 * validated, and a document seen once (values inlined in its text) is usually never seen again. Cached at once, each
 * such document outlived young-generation collections in the cache until the LRU dropped it, so V8 promoted it to old
 * space to die there. Under a stream of new query texts (bench/graphql-memory, 2026-11-24) full collections freed
 * 162 KB a request with every document cached, 85–89 KB with this admission: a third fewer full collections. Not
 * cached, a one-off document dies young with its request. A client that sends its values in variables repeats one
 * text, which is cached from its second request on; one-off documents no longer push repeated ones out either.
 */
export class DocumentCache implements DocumentStore {
  /** Map order is use order: the first entry is the least recently used. */
  private readonly entries = new Map<string, { document: DocumentNode; bytes: number }>();
  /** Keys stored once and not admitted, oldest first. */
  private readonly seenOnce = new Set<string>();
  private heldBytes = 0;

  constructor(
    readonly maxBytes: number = DOCUMENT_CACHE_BYTES,
    readonly maxSeenKeys: number = DOCUMENT_CACHE_SEEN_KEYS,
  ) {}

  /** Estimated heap held by the cached documents; never above maxBytes. */
  get bytes(): number {
    return this.heldBytes;
  }

  get size(): number {
    return this.entries.size;
  }

  get(key: string): Promise<DocumentNode | undefined> {
    const entry = this.entries.get(key);
    if (entry) {
      this.entries.delete(key);
      this.entries.set(key, entry);
    }
    return Promise.resolve(entry?.document);
  }

  set(key: string, document: DocumentNode): Promise<void> {
    if (!this.admit(key)) return Promise.resolve();
    this.remove(key);
    const bytes = documentHeapBytes(document);
    // A document larger than the whole budget is not kept (the token limit makes it one of ~1.7 MB at most).
    if (bytes <= this.maxBytes) {
      this.entries.set(key, { document, bytes });
      this.heldBytes += bytes;
      for (const [oldest] of this.entries) {
        if (this.heldBytes <= this.maxBytes) break;
        this.remove(oldest);
      }
    }
    return Promise.resolve();
  }

  delete(key: string): Promise<boolean> {
    return Promise.resolve(this.remove(key));
  }

  /** Whether a document stored under key is kept: it is already cached, or was stored once recently. */
  private admit(key: string): boolean {
    if (this.entries.has(key) || this.seenOnce.delete(key)) return true;
    this.seenOnce.add(key);
    if (this.seenOnce.size > this.maxSeenKeys) {
      for (const oldest of this.seenOnce) {
        this.seenOnce.delete(oldest);
        break;
      }
    }
    return false;
  }

  private remove(key: string): boolean {
    const entry = this.entries.get(key);
    if (!entry) return false;
    this.entries.delete(key);
    this.heldBytes -= entry.bytes;
    return true;
  }
}
