import { Counter, Gauge, Registry } from "prom-client";
import type { StaleReads } from "@mdp/db";

/**
 * The read replicas (DATABASE_REPLICA_URLS), read from the router when scraped: which are in use, how far behind each
 * was at its last probe, and where the stale-tolerant reads ran. Labels: `replica1`, `replica2`… never a host.
 */
export function replicaMetrics(reads: StaleReads): Registry {
  const registry = new Registry();
  new Gauge({
    name: "mdp_db_replica_in_use",
    help: "1 when the read replica answers as a hot standby within REPLICA_MAX_LAG_MS and takes reads, else 0",
    labelNames: ["replica"] as const,
    registers: [registry],
    collect() {
      for (const r of reads.states()) this.set({ replica: r.name }, r.inUse ? 1 : 0);
    },
  });
  new Gauge({
    name: "mdp_db_replica_lag_seconds",
    help: "How far the read replica was behind the primary at its last probe (an upper bound; absent when unknown)",
    labelNames: ["replica"] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const r of reads.states()) if (r.lagMs !== null) this.set({ replica: r.name }, r.lagMs / 1000);
    },
  });
  new Counter({
    name: "mdp_db_stale_reads_total",
    help: "Stale-tolerant reads by the server that answered (replica, primary); fallback: a replica's failure read again on the primary",
    labelNames: ["server"] as const,
    registers: [registry],
    collect() {
      const counts = reads.counts();
      this.reset();
      this.inc({ server: "replica" }, counts.replica);
      this.inc({ server: "primary" }, counts.primary);
      this.inc({ server: "fallback" }, counts.fallback);
    },
  });
  return registry;
}
