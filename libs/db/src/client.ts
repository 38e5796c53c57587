import { PrismaPg } from "@prisma/adapter-pg";
import pg from "pg";
import { PrismaClient } from "./generated/prisma/client";
import { primaryOnly, ReplicaRouter, type StaleReads, type WritePositions } from "./read-replicas";

export interface PrismaClientOptions {
  /** Most connections the client's pg pool opens (pg's default is 10). */
  poolMax?: number;
  /**
   * hot standbys for the stale-tolerant reads (DATABASE_REPLICA_URLS), how far behind one may be, and where the
   * processes serving the same users share their writes' positions (the gateways: read-your-writes across them)
   */
  replicas?: { urls: readonly string[]; maxLagMs: number; shared?: WritePositions };
}

/**
 * A Prisma client on `databaseUrl` through the pg driver adapter: queries run in the Wasm query compiler plus pg,
 * so no native Prisma engine is needed. Call `$disconnect()` on shutdown to close the pool.
 */
export function createPrismaClient(databaseUrl: string, opts: PrismaClientOptions = {}): PrismaClient {
  const adapter = new PrismaPg({ connectionString: databaseUrl, max: opts.poolMax ?? 10 });
  return new PrismaClient({ adapter });
}

/** Prisma and plain pg on one connection pool: pg for the bulk and DDL work Prisma cannot express (time series). */
export interface Database {
  prisma: PrismaClient;
  pool: pg.Pool;
  /** where the statements of `replicaReads` run: a usable replica, else this pool (read-replicas.ts) */
  stale: StaleReads;
  close(): Promise<void>;
}

export function createDatabase(databaseUrl: string, opts: PrismaClientOptions = {}): Database {
  const pool = new pg.Pool({ connectionString: databaseUrl, max: opts.poolMax ?? 10 });
  // An idle client that loses its connection emits 'error' on the pool; without a listener that would crash the process.
  pool.on("error", () => undefined);
  const prisma = new PrismaClient({ adapter: new PrismaPg(pool) });
  const replicaUrls = opts.replicas?.urls ?? [];
  const stale =
    replicaUrls.length > 0
      ? new ReplicaRouter({ prisma, pool }, replicaUrls, {
          maxLagMs: opts.replicas!.maxLagMs,
          poolMax: opts.poolMax,
          shared: opts.replicas!.shared,
        })
      : primaryOnly({ prisma, pool });
  return {
    prisma,
    pool,
    stale,
    close: async () => {
      await stale.close();
      await prisma.$disconnect();
      await pool.end();
    },
  };
}

/** Resolves when PostgreSQL answers a trivial statement through the client's pool (readiness probes). */
export async function pingDatabase(prisma: Pick<PrismaClient, "$queryRaw">): Promise<void> {
  await prisma.$queryRaw`SELECT 1`;
}
