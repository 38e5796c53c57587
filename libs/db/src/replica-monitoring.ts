import type { StaleReads } from "./read-replicas";

/** What /ready says of a replica, in every process that reads replicas (the gateway and the evaluation worker). */
export interface ReplicaReadiness {
  /** `replica1`, `replica2`, … in the order of DATABASE_REPLICA_URLS: never a host */
  name: string;
  /** `lagging`: further behind than REPLICA_MAX_LAG_MS */
  state: "in-use" | "lagging" | "unreachable";
  lagMs: number | null;
}

/**
 * Each replica's state and lag at its last probe, or undefined without replicas (/ready then says nothing of them).
 * Informative: reads fall back to the primary, so no state makes a process unready.
 */
export function replicaReadiness(reads: StaleReads): ReplicaReadiness[] | undefined {
  const states = reads.states();
  if (states.length === 0) return undefined;
  return states.map((r) => ({
    name: r.name,
    state: r.inUse ? "in-use" : r.up ? "lagging" : "unreachable",
    lagMs: r.lagMs,
  }));
}

type Labels = Record<string, string>;
interface MetricConfig<R> {
  name: string;
  help: string;
  labelNames: readonly string[];
  registers: R[];
  collect: () => void;
}

/**
 * The part of prom-client these metrics use. prom-client is each service's dependency, not this library's: the
 * service passes its module in (`import * as prom from "prom-client"`), as for @mdp/queues' worker metrics.
 */
export interface ReplicaPromClient<R> {
  Registry: new () => R;
  Gauge: new (config: MetricConfig<R>) => { set(labels: Labels, value: number): void; reset(): void };
  Counter: new (config: MetricConfig<R>) => { inc(labels: Labels, value?: number): void; reset(): void };
}

/**
 * The read replicas' metrics, read from the router when scraped: which are in use, how far behind each was at its
 * last probe, where the stale-tolerant reads ran, and how often the shared write positions (read-your-writes across
 * gateways) failed. Labels: `replica1`, `replica2`… never a host. The same in every process that reads replicas.
 */
export function replicaMetrics<R>(prom: ReplicaPromClient<R>, reads: StaleReads): R {
  const registry = new prom.Registry();
  const registers = [registry];
  const inUse = new prom.Gauge({
    name: "mdp_db_replica_in_use",
    help: "1 when the read replica answers as a hot standby within REPLICA_MAX_LAG_MS and takes reads, else 0",
    labelNames: ["replica"],
    registers,
    collect() {
      for (const r of reads.states()) inUse.set({ replica: r.name }, r.inUse ? 1 : 0);
    },
  });
  const lag = new prom.Gauge({
    name: "mdp_db_replica_lag_seconds",
    help: "How far the read replica was behind the primary at its last probe (an upper bound; absent when unknown)",
    labelNames: ["replica"],
    registers,
    collect() {
      lag.reset();
      for (const r of reads.states()) if (r.lagMs !== null) lag.set({ replica: r.name }, r.lagMs / 1000);
    },
  });
  const staleReads = new prom.Counter({
    name: "mdp_db_stale_reads_total",
    help: "Stale-tolerant reads by the server that answered (replica, primary); fallback: a replica's failure read again on the primary",
    labelNames: ["server"],
    registers,
    collect() {
      const counts = reads.counts();
      staleReads.reset();
      staleReads.inc({ server: "replica" }, counts.replica);
      staleReads.inc({ server: "primary" }, counts.primary);
      staleReads.inc({ server: "fallback" }, counts.fallback);
    },
  });
  const storeFailures = new prom.Counter({
    name: "mdp_db_write_position_failures_total",
    help: "Writers' positions shared between gateways (Redis) not stored or read within 200 ms: such a read ran on the primary",
    labelNames: [],
    registers,
    collect() {
      storeFailures.reset();
      storeFailures.inc({}, reads.counts().storeFailures);
    },
  });
  return registry;
}
