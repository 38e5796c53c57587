/** PostgreSQL WAL positions (`16/B374D848`) as read-your-writes compares them (read-replicas.ts). */
import type pg from "pg";

/** The highest WAL position PostgreSQL can write: what a write whose position was not learned is read after. */
export const UNKNOWN_POSITION = "FFFFFFFF/FFFFFFFF";

/** The later of WAL positions (undefined when none is given). */
export function latestLsn(positions: readonly (string | undefined)[]): string | undefined {
  let latest: string | undefined;
  for (const p of positions)
    if (p !== undefined && (latest === undefined || parseLsn(p) > parseLsn(latest))) latest = p;
  return latest;
}

/** A WAL position (`16/B374D848`) as a number of bytes. */
export function parseLsn(lsn: string): bigint {
  const [high, low] = lsn.split("/");
  return (BigInt(`0x${high}`) << 32n) + BigInt(`0x${low}`);
}

export const maxOf = (a: bigint, b: bigint) => (a > b ? a : b);

/** The primary's WAL position now. */
export async function currentLsn(pool: pg.Pool): Promise<string> {
  const { rows } = await pool.query<{ lsn: string }>("SELECT pg_current_wal_lsn()::text AS lsn");
  return rows[0]!.lsn;
}
