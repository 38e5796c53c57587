import type { Config, Logger } from "@mdp/core";
import { createRedis, type RedisConnection } from "./connection";

/** The longest a position's command waits on Redis: a read waiting on it would rather run on the primary. */
const COMMAND_TIMEOUT_MS = 200;

/**
 * Stores ARGV[1] (`16/B374D848`), expiring ARGV[2] ms from now, unless the stored WAL position is later: that one then
 * keeps its own expiry, so a steady writer never keeps an old position (or the "unknown" one, FFFFFFFF/FFFFFFFF) alive.
 * Each half of a position is a 32-bit hexadecimal number, exact in Lua's doubles, so the comparison is PostgreSQL's.
 */
const KEEP_LATER = `
local function halves(lsn)
  local high, low = string.match(lsn, '^(%x+)/(%x+)$')
  if not high then return nil end
  return tonumber(high, 16), tonumber(low, 16)
end
local stored = redis.call('GET', KEYS[1])
if stored then
  local sh, sl = halves(stored)
  local nh, nl = halves(ARGV[1])
  if sh and nh and (sh > nh or (sh == nh and sl > nl)) then return 0 end
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1
`;

type WithKeepLater = RedisConnection & {
  mdpKeepLaterLsn(key: string, lsn: string, ttlMs: number): Promise<unknown>;
};

/**
 * The key of an actor's last write position: the deployment's prefix without its hash tag's braces, so that on a
 * Redis Cluster the actors' keys spread over every master (each command touches one key).
 */
export function writePositionKey(queuePrefix: string, actor: string): string {
  return `${queuePrefix.replace(/[{}]/g, "")}:read-after:${actor}`;
}

/**
 * Read-your-writes across processes (@mdp/db's WritePositions): each actor's last write position, one key per actor
 * that expires with the position's window, shared by every gateway. A write's position is kept only if it is later
 * than the one stored (two gateways may note one actor's writes out of order).
 */
export class RedisWritePositions {
  private readonly redis: WithKeepLater;

  /** when a failure was last logged: at most one warning a minute, however many reads fall back */
  private warnedAt = 0;

  constructor(
    redis: RedisConnection,
    private readonly queuePrefix: string,
    /** where failures are told (warn, at most once a minute): each sends reads to the primary, or a write unshared */
    private readonly logger?: Logger,
  ) {
    redis.defineCommand("mdpKeepLaterLsn", { numberOfKeys: 1, lua: KEEP_LATER });
    this.redis = redis as WithKeepLater;
  }

  /** A connection of its own that fails fast: never queued while Redis is away, no retry, 200 ms per command. */
  static connect(config: Pick<Config, "REDIS_URL">, logger: Logger): RedisConnection {
    const redis = createRedis(config.REDIS_URL, "producer", {
      maxRetriesPerRequest: 0,
      commandTimeout: COMMAND_TIMEOUT_MS,
      connectionName: "mdp-write-positions",
    });
    // Each command's failure reaches its caller (who reads on the primary); the connection's own are only worth a line.
    redis.on("error", (error: Error) => logger.debug({ err: error }, "write-position Redis connection"));
    return redis;
  }

  async note(actor: string, lsn: string, ttlMs: number): Promise<void> {
    const key = writePositionKey(this.queuePrefix, actor);
    await this.redis.mdpKeepLaterLsn(key, lsn, Math.max(1, Math.ceil(ttlMs))).catch(this.failed("note"));
  }

  async get(actor: string): Promise<string | undefined> {
    return (await this.redis.get(writePositionKey(this.queuePrefix, actor)).catch(this.failed("get"))) ?? undefined;
  }

  private failed(command: string): (error: unknown) => never {
    return (error) => {
      if (Date.now() - this.warnedAt >= 60_000) {
        this.warnedAt = Date.now();
        this.logger?.warn(
          { err: error, command },
          "read-your-writes: Redis did not answer for a write position; reads go to the primary meanwhile",
        );
      }
      throw error;
    };
  }
}
