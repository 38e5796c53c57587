import type { RedisConnection } from "@mdp/queues";
import { withTimeout, type Logger } from "@mdp/core";
import {
  migrationStatus,
  pingDatabase,
  replicaReadiness,
  type PrismaClient,
  type ReplicaReadiness,
  type StaleReads,
} from "@mdp/db";

export interface ReadinessReport {
  ready: boolean;
  checks: { postgres: string; redis: string; migrations: string };
  /** With DATABASE_REPLICA_URLS, each replica's state and lag (@mdp/db's replicaReadiness): none makes a 503. */
  replicas?: ReplicaReadiness[];
}

/**
 * What /ready says of each check: a fixed word, never the error behind it. /ready answers without credentials, and an
 * error's text names hosts, ports, statements and migration names; that detail goes to the log instead.
 */
type CheckState = "ok" | "unreachable" | "pending" | "failed" | "unknown";

/** PostgreSQL and Redis reachable, and every migration applied. */
export class Readiness {
  // Migrations never un-apply while we run, so once they are seen complete the check is skipped.
  private migrationsComplete = false;
  /** the detail last logged per check, so a probe polled every few seconds logs a change once, not every poll */
  private readonly logged = new Map<string, string>();

  constructor(
    private readonly prisma: PrismaClient,
    private readonly redis: RedisConnection,
    private readonly databaseUrl: string,
    private readonly logger?: Logger,
    private readonly reads?: StaleReads,
  ) {}

  async check(): Promise<ReadinessReport> {
    const [postgres, redis, migrations] = await Promise.all([
      this.probe("postgres", () => pingDatabase(this.prisma)),
      this.probe("redis", () => this.redis.ping()),
      this.migrations(),
    ]);
    const report: ReadinessReport = {
      ready: [postgres, redis, migrations].every((c) => c === "ok"),
      checks: { postgres, redis, migrations },
    };
    const replicas = this.reads && replicaReadiness(this.reads);
    if (replicas) report.replicas = replicas;
    return report;
  }

  private async probe(check: string, fn: () => Promise<unknown>): Promise<CheckState> {
    try {
      await withTimeout(fn(), 2_000);
      return this.report(check, "ok");
    } catch (error) {
      return this.report(check, "unreachable", error);
    }
  }

  private async migrations(): Promise<CheckState> {
    if (this.migrationsComplete) return "ok";
    try {
      const status = await withTimeout(migrationStatus(this.databaseUrl), 5_000);
      if (status.problems.length > 0) return this.report("migrations", "failed", status.problems.join("; "));
      if (status.pending.length > 0) return this.report("migrations", "pending", status.pending.join(", "));
      this.migrationsComplete = true;
      return this.report("migrations", "ok");
    } catch (error) {
      return this.report("migrations", "unknown", error);
    }
  }

  /** Logs a check's state with its detail when they change (a recovery too), and returns the state alone. */
  private report(check: string, state: CheckState, detail?: unknown): CheckState {
    const text = detail instanceof Error ? detail.message : detail === undefined ? "" : String(detail);
    const key = `${state}: ${text}`;
    const previous = this.logged.get(check);
    if (previous !== key && !(previous === undefined && state === "ok")) {
      this.logged.set(check, key);
      if (state === "ok") this.logger?.info({ check }, "readiness check ok again");
      else this.logger?.warn({ check, state, detail: text }, `readiness check ${check}: ${state}`);
    }
    return state;
  }
}
