import { PrismaPg } from "@prisma/adapter-pg";
import { PrismaClient } from "./generated/prisma/client";

export interface PrismaClientOptions {
  /** Most connections the client's pg pool opens (pg's default is 10). */
  poolMax?: number;
}

/**
 * A Prisma client on `databaseUrl` through the pg driver adapter: queries run in the Wasm query compiler plus pg,
 * so no native Prisma engine is needed. Call `$disconnect()` on shutdown to close the pool.
 */
export function createPrismaClient(databaseUrl: string, opts: PrismaClientOptions = {}): PrismaClient {
  const adapter = new PrismaPg({ connectionString: databaseUrl, max: opts.poolMax ?? 10 });
  return new PrismaClient({ adapter });
}
