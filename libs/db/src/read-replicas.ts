import { PrismaPg } from "@prisma/adapter-pg";
import pg from "pg";
import { runInScope, scopeValue, withTimeout } from "@mdp/core";
import { PrismaClient } from "./generated/prisma/client";
import { currentLsn, latestLsn, maxOf, parseLsn, UNKNOWN_POSITION } from "./wal-positions";

/** A server a read runs on: Prisma and pg on its one pool. */
export interface ReadTarget {
  prisma: PrismaClient;
  pool: pg.Pool;
}

/** What /ready and the metrics say of a replica: its position in DATABASE_REPLICA_URLS, never its host. */
export interface ReplicaState {
  /** `replica1`, `replica2`, … in the order of DATABASE_REPLICA_URLS */
  name: string;
  /** answered its last probe as a hot standby */
  up: boolean;
  /** up and within REPLICA_MAX_LAG_MS: reads go to it */
  inUse: boolean;
  /** how far behind the primary it was at its last probe (an upper bound), null when unknown */
  lagMs: number | null;
}

/** Reads per server kind since start: `fallback` counts replica reads that failed and were run again on the primary. */
export interface ReadCounts {
  replica: number;
  primary: number;
  fallback: number;
  /** the shared store of write positions failed or was late (a read then ran on the primary) */
  storeFailures: number;
}

/**
 * Write positions shared by the processes that serve one user (the gateways, through Redis): a write noted in one is
 * read after in every other. One entry per actor, expiring on its own.
 */
export interface WritePositions {
  /** keeps the later of `lsn` and the actor's stored position, for `ttlMs` from now */
  note(actor: string, lsn: string, ttlMs: number): Promise<void>;
  /** the actor's stored position, undefined when it has none; rejects when the store cannot say */
  get(actor: string): Promise<string | undefined>;
}

/**
 * Where the stale-tolerant statements run (`replicaReads`, stale-reads.ts): a replica when one is usable for the
 * reader, else the primary. Without replicas every read is the primary's and nothing is probed.
 */
export interface StaleReads {
  /** `after`: a WAL position (`16/B374D848`) the replica must have replayed, a writer's carried in a job */
  read<T>(fn: (target: ReadTarget) => Promise<T>, opts?: { after?: string }): Promise<T>;
  /** whether any replica is configured (without, callers keep their one-statement primary paths) */
  readonly replicated: boolean;
  /** the WAL position `actor`'s recent write (in any process sharing positions) must be read after; undefined if none */
  positionOf(actor: string): Promise<string | undefined>;
  /** after `actor`'s write committed: its next reads wait for a replica that has replayed it (or use the primary) */
  noteWrite(actor?: string): Promise<void>;
  states(): ReplicaState[];
  counts(): ReadCounts;
  close(): Promise<void>;
}

export interface ReplicaOptions {
  maxLagMs: number;
  /** how often each replica's replay position is measured (1 s) */
  probeMs?: number;
  /** connections per replica pool (the primary's pool size by default) */
  poolMax?: number;
  /** positions shared with the other processes serving the same users (read-your-writes across gateways) */
  shared?: WritePositions;
  /** the longest a read or a write waits on `shared` (200 ms): past it, the read goes to the primary */
  sharedTimeoutMs?: number;
}

/** Who the current request or job reads and writes for (read-your-writes is per actor), and where it reads. */
interface Reader {
  actor: string;
  reads: StaleReads;
}
/** The current request's or job's reader (@mdp/core's async scope: one storage for it, the log and the trace). */
const currentReaderOf = () => scopeValue("reader") as Reader | undefined;

/** Runs `fn` (and what it awaits) as `actor`'s: its stale-tolerant reads see its own writes noted with readerWrote. */
export function withReader<T>(actor: string, reads: StaleReads, fn: () => T): T {
  return runInScope("reader", { actor, reads } satisfies Reader, fn);
}

export function currentReader(): string | undefined {
  return currentReaderOf()?.actor;
}

/** The current reader's recent write, as a WAL position a job it queues carries to a worker (readAfter). */
export async function readerPosition(): Promise<string | undefined> {
  const reader = currentReaderOf();
  return reader?.reads.positionOf(reader.actor);
}

/** The current reader has written: notes the primary's position for its next reads (nothing without replicas). */
export async function readerWrote(): Promise<void> {
  const reader = currentReaderOf();
  if (reader) await reader.reads.noteWrite(reader.actor);
}

/** How long a replica's answer to a read's ask of its replay position stands, and how long the read waits for it. */
const REASK_MS = 10;
const ASK_TIMEOUT_MS = 100;

/** Every read on the primary: what a process without DATABASE_REPLICA_URLS has. */
export function primaryOnly(primary: ReadTarget): StaleReads {
  let reads = 0;
  return {
    read: (fn) => {
      reads += 1;
      return fn(primary);
    },
    replicated: false,
    positionOf: async () => undefined,
    noteWrite: async () => undefined,
    states: () => [],
    counts: () => ({ replica: 0, primary: reads, fallback: 0, storeFailures: 0 }),
    close: async () => undefined,
  };
}

interface Replica extends ReadTarget {
  name: string;
  up: boolean;
  lagMs: number | null;
  replayLsn: bigint;
  /** Date.now() of its last answered probe */
  probedAt: number;
  /** a read's ask of its replay position under way (replayedBy), shared by the reads that need it meanwhile */
  asking?: Promise<void>;
  /** Date.now() of the last such ask's answer */
  askedAt: number;
  /** its pool's size */
  poolMax: number;
}

/**
 * The connection or the server went away: a PostgreSQL class 08 or 57P0x, a socket's (ECONNREFUSED…), Prisma's
 * P1xxx, or no code at all. Other errors (a statement the replica cancelled, say) leave the replica in use.
 */
function isConnectionFailure(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code !== "string") return true;
  return code.startsWith("08") || code.startsWith("57P") || code.startsWith("P1") || /^E[A-Z]+$/.test(code);
}

/** `promise`, or a failure once `ms` pass without its answer (@mdp/core's one timeout race). */
function timeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  return withTimeout(promise, ms, () => new Error(`no answer in ${ms} ms`));
}

/**
 * Hot standbys measured against the primary once a second: a replica is used while it answers, is a standby and is
 * at most `maxLagMs` behind; a reader that wrote in the last moments uses one only once it has replayed that write.
 */
export class ReplicaRouter implements StaleReads {
  private readonly replicas: Replica[];
  private readonly probeMs: number;
  /** the primary's WAL position at each recent probe: how long ago the primary was where a replica is now */
  private readonly samples: { at: number; lsn: bigint }[] = [];
  /** per actor, the primary's WAL position after its last write and until when it matters */
  private readonly writes = new Map<string, { text: string; until: number }>();
  readonly replicated = true;
  private readonly tally: ReadCounts = { replica: 0, primary: 0, fallback: 0, storeFailures: 0 };
  private readonly sharedTimeoutMs: number;
  private next = 0;
  private timer: NodeJS.Timeout | undefined;
  private probing: Promise<void> | undefined;

  constructor(
    private readonly primary: ReadTarget,
    urls: readonly string[],
    private readonly opts: ReplicaOptions,
  ) {
    this.probeMs = opts.probeMs ?? 1000;
    this.sharedTimeoutMs = opts.sharedTimeoutMs ?? 200;
    this.replicas = urls.map((url, i) => {
      // connectionTimeoutMillis: a replica that stopped answering fails its read within a second, retried on the primary.
      const poolMax = opts.poolMax ?? 10;
      const pool = new pg.Pool({ connectionString: url, max: poolMax, connectionTimeoutMillis: 1000 });
      pool.on("error", () => undefined); // an idle connection lost (the replica stopped): noticed by the next probe
      return {
        name: `replica${i + 1}`,
        pool,
        prisma: new PrismaClient({ adapter: new PrismaPg(pool) }),
        up: false,
        lagMs: null,
        replayLsn: 0n,
        probedAt: 0,
        askedAt: 0,
        poolMax,
      };
    });
    this.timer = setInterval(() => void this.probe(), this.probeMs);
    this.timer.unref();
    void this.probe();
  }

  /** Resolves once every replica has been measured (a start that wants its replicas in use from the first read). */
  async measured(): Promise<void> {
    await (this.probing ?? this.probe());
  }

  async read<T>(fn: (target: ReadTarget) => Promise<T>, opts: { after?: string } = {}): Promise<T> {
    const replica = await this.choose(currentReader(), opts.after);
    if (!replica) {
      this.tally.primary += 1;
      return fn(this.primary);
    }
    try {
      const result = await fn(replica);
      this.tally.replica += 1;
      return result;
    } catch (error) {
      // Skipped at once, until a probe finds it answering again; the caller sees the primary's answer instead.
      if (isConnectionFailure(error)) replica.up = false;
      this.tally.fallback += 1;
      this.tally.primary += 1;
      return fn(this.primary);
    }
  }

  async noteWrite(actor = currentReader()): Promise<void> {
    if (actor === undefined) return;
    // Never a failure of the request whose write committed: a position not learned sends the actor's reads to the
    // primary for the window (no replica reaches the last position there is).
    const text = await currentLsn(this.primary.pool).catch(() => UNKNOWN_POSITION);
    // Long enough that any usable replica (within maxLagMs at a probe less than 3 probeMs old) has the write by then.
    const windowMs = this.opts.maxLagMs + 3 * this.probeMs;
    this.writes.set(actor, { text, until: Date.now() + windowMs });
    // Awaited: the caller's next request, on whichever process, comes after this answer and so finds the position.
    // A store that fails here leaves the write read-your-own on this process only; the request still succeeds.
    const { shared } = this.opts;
    if (shared) await timeout(shared.note(actor, text, windowMs), this.sharedTimeoutMs).catch(() => this.storeFailed());
  }

  async positionOf(actor: string): Promise<string | undefined> {
    try {
      return await this.after(actor);
    } catch {
      this.storeFailed();
      // Unknown whether it wrote elsewhere: whatever it wrote is at or before the primary's position now.
      return currentLsn(this.primary.pool).catch(() => UNKNOWN_POSITION);
    }
  }

  states(): ReplicaState[] {
    return this.replicas.map((r) => ({ name: r.name, up: r.up, inUse: this.usable(r), lagMs: r.lagMs }));
  }

  counts(): ReadCounts {
    return { ...this.tally };
  }

  /**
   * The later of the actor's writes noted here and in the shared store (one GET, bounded by sharedTimeoutMs), while
   * they matter, and a carried position. Rejects when the store cannot say: the caller then reads on the primary.
   */
  private async after(actor: string | undefined, carried?: string): Promise<string | undefined> {
    const write = actor === undefined ? undefined : this.writes.get(actor);
    const own = write && write.until > Date.now() ? write.text : undefined;
    const { shared } = this.opts;
    const elsewhere =
      actor !== undefined && shared ? await timeout(shared.get(actor), this.sharedTimeoutMs) : undefined;
    return latestLsn([own, elsewhere, carried]);
  }

  private storeFailed(): void {
    this.tally.storeFailures += 1;
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.probing;
    for (const r of this.replicas) {
      await r.prisma.$disconnect();
      await r.pool.end();
    }
  }

  private usable(r: Replica): boolean {
    const fresh = Date.now() - r.probedAt < 3 * this.probeMs;
    return r.up && fresh && r.lagMs !== null && r.lagMs <= this.opts.maxLagMs;
  }

  private async choose(actor: string | undefined, carried: string | undefined): Promise<Replica | undefined> {
    const usable = this.replicas.filter((r) => this.usable(r));
    if (usable.length === 0) return undefined; // the primary anyway: nothing to ask the store
    let position: string | undefined;
    try {
      position = await this.after(actor, carried);
    } catch {
      this.storeFailed();
      return undefined; // not known what the actor wrote on another process: its own writes come first
    }
    const after = position === undefined ? undefined : parseLsn(position);
    const candidates = usable.filter((r) => after === undefined || r.replayLsn >= after);
    if (candidates.length > 0) {
      this.next = (this.next + 1) % candidates.length;
      return candidates[this.next];
    }
    // `after` is set (without it every usable replica is a candidate); a position not learned no replica reaches
    if (position === UNKNOWN_POSITION) return undefined;
    const furthest = usable.reduce((a, b) => (b.replayLsn > a.replayLsn ? b : a));
    return this.replayedBy(furthest, after!);
  }

  /**
   * `r` when it has replayed `after` by now, asked at once: a probe's position is up to a second old, and the reads
   * right after their reader's write went to the primary until the next probe (runTest's batches after the runTest
   * mutation: a tenth of the run, at times most of it). One query on the replica, none on the primary; the reads that
   * need it while it is asked share the ask, and for REASK_MS after an answer that it is still behind, the primary
   * without asking again. Not asked while its pool has no idle connection: the ask would wait behind the replica's
   * reads, and the read is the primary's at once, as before.
   */
  private async replayedBy(r: Replica, after: bigint): Promise<Replica | undefined> {
    const pool = r.pool;
    const busy = pool.waitingCount > 0 || (pool.idleCount === 0 && pool.totalCount >= r.poolMax);
    if (!r.asking && !busy && Date.now() - r.askedAt >= REASK_MS) {
      r.asking = timeout(
        r.pool.query<{ replay: string | null }>("SELECT pg_last_wal_replay_lsn()::text AS replay"),
        Math.min(this.probeMs, ASK_TIMEOUT_MS),
      )
        .then(({ rows }) => {
          const replay = rows[0]?.replay;
          if (replay) r.replayLsn = maxOf(r.replayLsn, parseLsn(replay));
        })
        .catch(() => undefined) // the primary for this read; the probes say whether the replica is still up
        .finally(() => {
          r.asking = undefined;
          r.askedAt = Date.now();
        });
    }
    await r.asking;
    return r.replayLsn >= after ? r : undefined;
  }

  private probe(): Promise<void> {
    this.probing ??= this.measure().finally(() => (this.probing = undefined));
    return this.probing;
  }

  private async measure(): Promise<void> {
    const at = Date.now();
    let primaryLsn: bigint;
    try {
      primaryLsn = parseLsn(await timeout(currentLsn(this.primary.pool), this.probeMs));
    } catch {
      return; // the primary unreachable: the replicas keep their last states, and go stale after a few probes
    }
    this.samples.push({ at, lsn: primaryLsn });
    while ((this.samples[0]?.at ?? at) < at - 600_000) this.samples.shift();
    for (const [actor, w] of this.writes) if (w.until <= at) this.writes.delete(actor);
    await Promise.all(this.replicas.map((r) => this.measureReplica(r, primaryLsn)));
  }

  private async measureReplica(r: Replica, primaryLsn: bigint): Promise<void> {
    try {
      const { rows } = await timeout(
        r.pool.query<{ standby: boolean; replay: string | null; since_replay_ms: number | null }>(
          `SELECT pg_is_in_recovery() AS standby, pg_last_wal_replay_lsn()::text AS replay,
                  (extract(epoch FROM clock_timestamp() - pg_last_xact_replay_timestamp()) * 1000)::float8
                    AS since_replay_ms`,
        ),
        this.probeMs,
      );
      const now = Date.now();
      r.probedAt = now;
      const { standby = false, replay = null, since_replay_ms: sinceReplay = null } = rows[0] ?? {};
      r.up = standby && replay !== null;
      if (!r.up || replay === null) return;
      r.replayLsn = parseLsn(replay);
      r.lagMs = this.lagOf(r.replayLsn, primaryLsn, sinceReplay, now);
    } catch {
      r.up = false;
    }
  }

  /**
   * Two upper bounds, the lower taken: the replica has replayed all the primary had written at the last probe whose
   * position it has reached, and all up to the last transaction it replayed (that commit's time, by the primary's clock).
   */
  private lagOf(replay: bigint, primaryLsn: bigint, sinceReplayMs: number | null, now: number): number {
    if (replay >= primaryLsn) return 0;
    let bySample = Number.POSITIVE_INFINITY;
    for (let i = this.samples.length - 1; i >= 0; i--) {
      const sample = this.samples[i]!;
      if (sample.lsn <= replay) {
        bySample = now - sample.at;
        break;
      }
    }
    const byReplay = sinceReplayMs === null ? Number.POSITIVE_INFINITY : Math.max(0, sinceReplayMs);
    const lag = Math.min(bySample, byReplay);
    return Number.isFinite(lag) ? Math.round(lag) : 3_600_000;
  }
}
