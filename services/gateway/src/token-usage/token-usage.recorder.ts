import type { RequestHandler } from "express";
import { LRUCache } from "lru-cache";
import { every, type Logger, type PeriodicLoop } from "@mdp/core";
import {
  inPrismaTransaction,
  MAX_CLIENT_IP_CHARS,
  MAX_CLIENTS_PER_TOKEN,
  MAX_OPERATION_CHARS,
  MAX_USER_AGENT_CHARS,
  recordAccessTokenUsage,
  recordAccessTokenUses,
  type PrismaClient,
  type UsageBatch,
} from "@mdp/db";
import type { Actor } from "../auth/actor";

/** Distinct operations a token keeps per flush; past them its requests count as `other` (the labels are bounded). */
const MAX_OPERATIONS_PER_FLUSH = 100;
/** Tokens a flush holds at most; uses of more are dropped until the next flush (memory stays bounded). */
const MAX_TOKENS_PER_FLUSH = 50_000;
const DAY_MS = 86_400_000;

type Client = { ip: string; userAgent: string; at: number };

/** One token's uses since the last flush. */
interface PendingUse {
  /** epoch ms of its latest accepted authentication (a number: no Date per request); its lastUsedAt */
  lastUsedAt?: number;
  /** `ip \0 user agent` → the pair and its latest time; at most MAX_CLIENTS_PER_TOKEN, the most recently seen */
  clients?: LRUCache<string, Client>;
  /** `day \0 operation` → requests */
  operations?: Map<string, number>;
}

/**
 * The one recorder of access tokens' uses: each token's lastUsedAt (`used`, from the verifier, for every accepted
 * authentication) and what it is used for (`record`, after a request's answer with ACCESS_TOKEN_USAGE_RECORDING:
 * client pairs, requests by operation and UTC day). Both wait in one bounded map per replica and are written together
 * in one transaction every few seconds and on shutdown, never a write per request: lastUsedAt is at most
 * FLUSH_INTERVAL_MS stale, and a request pays for a map update or two.
 */
export class TokenUsageRecorder {
  static readonly FLUSH_INTERVAL_MS = 5_000;
  private pending = new Map<string, PendingUse>();
  private dropped = 0;
  private dayEnds = 0;
  private day = "";
  private readonly loop: PeriodicLoop;

  constructor(
    private readonly prisma: PrismaClient,
    private readonly logger: Logger,
  ) {
    this.loop = every("token-usage-flush", TokenUsageRecorder.FLUSH_INTERVAL_MS, () => this.flush(), { logger });
  }

  /** `tokenId` was accepted (its lastUsedAt). */
  used(tokenId: string, at = Date.now()): void {
    const use = this.pendingOf(tokenId);
    if (use) use.lastUsedAt = at;
  }

  /** Records a request made with `tokenId`: its client pair and its operations (one count each). */
  record(tokenId: string, ip: string, userAgent: string, operations: readonly string[], at = Date.now()): void {
    const use = this.pendingOf(tokenId);
    if (!use) return;
    const clients = (use.clients ??= new LRUCache({ max: MAX_CLIENTS_PER_TOKEN }));
    const clientKey = `${ip}\0${userAgent}`;
    const client = clients.get(clientKey); // now the most recently seen
    if (client) client.at = at;
    else {
      clients.set(clientKey, {
        ip: ip.slice(0, MAX_CLIENT_IP_CHARS),
        userAgent: userAgent.slice(0, MAX_USER_AGENT_CHARS),
        at,
      });
    }
    const counts = (use.operations ??= new Map());
    const day = this.dayOf(at);
    for (const operation of operations) {
      let key = `${day}\0${operation}`;
      if (!counts.has(key) && counts.size >= MAX_OPERATIONS_PER_FLUSH) key = `${day}\0other`;
      counts.set(key, (counts.get(key) ?? 0) + 1);
    }
  }

  async flush(): Promise<void> {
    if (this.pending.size === 0) return;
    const batch = this.pending;
    this.pending = new Map();
    if (this.dropped > 0) {
      this.logger.warn({ dropped: this.dropped }, "token usage: more tokens used within a flush than are kept");
      this.dropped = 0;
    }
    const lastUsed: { ids: string[]; times: Date[] } = { ids: [], times: [] };
    const rows: UsageBatch = {
      clients: { tokenIds: [], ips: [], userAgents: [], times: [] },
      operations: { tokenIds: [], days: [], operations: [], counts: [] },
    };
    // In token id order: replicas flushing the same tokens at once take their rows' locks in the same order.
    for (const [tokenId, use] of [...batch].sort(([a], [b]) => (a < b ? -1 : 1))) {
      if (use.lastUsedAt !== undefined) {
        lastUsed.ids.push(tokenId);
        lastUsed.times.push(new Date(use.lastUsedAt));
      }
      for (const client of use.clients?.values() ?? []) {
        rows.clients.tokenIds.push(tokenId);
        rows.clients.ips.push(client.ip);
        rows.clients.userAgents.push(client.userAgent);
        rows.clients.times.push(new Date(client.at));
      }
      for (const [key, count] of use.operations ?? []) {
        const split = key.indexOf("\0");
        rows.operations.tokenIds.push(tokenId);
        rows.operations.days.push(key.slice(0, split));
        rows.operations.operations.push(key.slice(split + 1, split + 1 + MAX_OPERATION_CHARS));
        rows.operations.counts.push(count);
      }
    }
    try {
      await inPrismaTransaction(this.prisma, async (tx) => {
        await recordAccessTokenUsage(tx, rows);
        // Last: access_token's rows stay locked only for the end of the transaction. Several replicas flush
        // independently; the newest use is kept.
        if (lastUsed.ids.length > 0) await recordAccessTokenUses(tx, lastUsed.ids, lastUsed.times);
      });
    } catch (error) {
      this.logger.warn({ err: error, tokens: batch.size }, "could not record the use of access tokens");
    }
  }

  async stop(): Promise<void> {
    await this.loop.stop(); // a flush in flight ends first
    await this.flush();
  }

  /** The token's pending use, made if need be; undefined (the use dropped, counted) once MAX_TOKENS_PER_FLUSH wait. */
  private pendingOf(tokenId: string): PendingUse | undefined {
    let use = this.pending.get(tokenId);
    if (!use) {
      if (this.pending.size >= MAX_TOKENS_PER_FLUSH) {
        this.dropped++;
        return undefined;
      }
      use = {};
      this.pending.set(tokenId, use);
    }
    return use;
  }

  /** The UTC day of `at` as YYYY-MM-DD, computed once a day rather than per request. */
  private dayOf(at: number): string {
    if (at >= this.dayEnds || at < this.dayEnds - DAY_MS) {
      this.day = new Date(at).toISOString().slice(0, 10);
      this.dayEnds = (Math.floor(at / DAY_MS) + 1) * DAY_MS;
    }
    return this.day;
  }
}

/**
 * After authentication: a request made with an access token is recorded once its answer is sent, with the
 * operations it ran (`res.locals.operations`, set by the GraphQL server once the document is resolved: its root
 * fields, `Query.me`) or, for HTTP, its route and action (`POST /gms/operations?action=truncate`). A request no route
 * took is recorded under the page it belongs to (`pages`: a mounted app serving its own files, such as the queue
 * dashboard's, has no route pattern to name), or else as answered without one (`GET (no route, 404)`). Labels come
 * from the schema, the routes and those mount points only, never from what a caller writes.
 */
export function recordTokenUse(
  recorder: Pick<TokenUsageRecorder, "record">,
  routeOf: (req: Parameters<RequestHandler>[0]) => string | undefined,
  pages: readonly string[] = [],
): RequestHandler {
  return (req, res, next) => {
    const actor = res.locals.actor as Actor | undefined;
    const tokenId = actor?.via === "token" ? actor.tokenId : undefined;
    if (tokenId !== undefined) {
      res.once("finish", () => {
        const locals = res.locals as { operations?: string[]; action?: unknown };
        let operations = locals.operations;
        if (!operations) {
          const route = routeOf(req)?.replace(/^\/api(?=\/gms)/, "");
          const action = typeof locals.action === "string" && req.query.action !== undefined ? locals.action : null;
          const path = req.originalUrl.split("?", 1)[0]!.toLowerCase();
          const page = pages.find((mount) => path === mount || path.startsWith(`${mount}/`));
          const label = route ?? page ?? `(no route, ${res.statusCode})`;
          operations = [`${req.method} ${label}${action === null || route === undefined ? "" : `?action=${action}`}`];
        }
        recorder.record(tokenId, clientIp(req), req.headers["user-agent"] ?? "", operations);
      });
    }
    next();
  };
}

/**
 * req.ip, without express's proxy-addr walk when no proxy named anyone (no X-Forwarded-For): then req.ip is the
 * socket's address whatever the trusted proxies, and working that out cost every token request half a percent.
 */
function clientIp(req: Parameters<RequestHandler>[0]): string {
  if (req.headers["x-forwarded-for"] === undefined) return req.socket.remoteAddress ?? "";
  return req.ip ?? "";
}
