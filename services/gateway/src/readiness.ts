import type { Redis } from "ioredis";
import { migrationStatus, type PrismaClient } from "@mdp/db";

export interface ReadinessReport {
  ready: boolean;
  checks: { postgres: string; redis: string; migrations: string };
}

/** PostgreSQL and Redis reachable, and every migration applied. */
export class Readiness {
  // Migrations never un-apply while we run, so once they are seen complete the check is skipped.
  private migrationsComplete = false;

  constructor(
    private readonly prisma: PrismaClient,
    private readonly redis: Redis,
    private readonly databaseUrl: string,
  ) {}

  async check(): Promise<ReadinessReport> {
    const [postgres, redis, migrations] = await Promise.all([
      this.probe(() => this.prisma.$queryRaw`SELECT 1`),
      this.probe(() => this.redis.ping()),
      this.migrations(),
    ]);
    return { ready: [postgres, redis, migrations].every((c) => c === "ok"), checks: { postgres, redis, migrations } };
  }

  private async probe(fn: () => Promise<unknown>): Promise<string> {
    try {
      await withTimeout(fn(), 2_000);
      return "ok";
    } catch (error) {
      return `unreachable: ${error instanceof Error ? error.message : String(error)}`;
    }
  }

  private async migrations(): Promise<string> {
    if (this.migrationsComplete) return "ok";
    try {
      const status = await withTimeout(migrationStatus(this.databaseUrl), 5_000);
      if (status.problems.length > 0) return `problems: ${status.problems.join("; ")}`;
      if (status.pending.length > 0) return `pending: ${status.pending.join(", ")}`;
      this.migrationsComplete = true;
      return "ok";
    } catch (error) {
      return `unknown: ${error instanceof Error ? error.message : String(error)}`;
    }
  }
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
