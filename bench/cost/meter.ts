/**
 * What bench/cost measures with: snapshots of every process's CPU (less what it uses at rest), PostgreSQL's statements
 * and Redis's commands around a window of load, divided by the units the window served; and the bounded load itself.
 */
import { performance } from "node:perf_hooks";
import autocannon from "autocannon";
import type { Pool } from "pg";
import { cpuSeconds, loadAverage, machineBusySeconds, memoryMb, type Measured } from "./proc";
import type { CommandCount, PrivateStack, StatementCount } from "./private-stack";

interface Snapshot {
  at: number;
  cpu: Record<string, number>;
  statements: StatementCount;
  commands: CommandCount;
  machine: number;
}

/** One operation's figures, per unit (a request, a million rows, a thousand entities). */
export interface Cost {
  operation: string;
  unit: string;
  units: number;
  seconds: number;
  load: string;
  /** CPU seconds per unit, by process name */
  cpu: Record<string, number>;
  statements: number;
  controlStatements: number;
  commands: number;
  scriptCommands: number;
  restMb: Record<string, number>;
  peakMb: Record<string, number>;
  /** CPU seconds per second of the machine's processes that are not this run's (other people's work) */
  othersCores: number;
  note?: string;
}

/** Snapshots of every process's CPU, the statement and command counters, and the machine's busy time. */
export class Meter {
  /** per second at rest: CPU seconds by process, statements, commands */
  rest = { cpu: {} as Record<string, number>, statements: 0, commands: 0, mb: {} as Record<string, number> };

  constructor(
    private readonly processes: Measured[],
    private readonly stack: PrivateStack,
  ) {}

  private async snapshot(): Promise<Snapshot> {
    const [statements, commands] = await Promise.all([this.stack.statements(), this.stack.commands()]);
    const cpu = Object.fromEntries(this.processes.map((p) => [p.name, cpuSeconds(p)]));
    return { at: performance.now(), cpu, statements, commands, machine: machineBusySeconds() };
  }

  /**
   * The rest rates: the least of one-second samples over `seconds`, per process and counter. A burst of background
   * work in one sample (a chore's firing, an outbox consumer finishing what the last window wrote) would otherwise be
   * subtracted from every later window as if it were idle cost, down to a window of no CPU at all.
   */
  /**
   * Before a window: what the writes before it left to autovacuum (tokens created, rows loaded, a run's versions) is
   * done now and the rest is measured afresh, so a burst of background work is neither subtracted from the window as
   * idle cost nor charged to it. Without it a full run once charged the creations' autovacuum to evaluate's window
   * (PostgreSQL 1,753 µs a request against 150 µs once settled).
   */
  async settle(pool: Pick<Pool, "query">): Promise<void> {
    await pool.query("VACUUM ANALYZE");
    await pool.query("CHECKPOINT");
    await this.measureRest(2);
  }

  async measureRest(seconds: number): Promise<void> {
    const samples = Math.max(1, Math.round(seconds));
    const cpu: Record<string, number> = {};
    let statements = Infinity;
    let commands = Infinity;
    let a = await this.snapshot();
    for (let i = 0; i < samples; i++) {
      await new Promise((r) => setTimeout(r, (seconds * 1000) / samples));
      const b = await this.snapshot();
      const dt = (b.at - a.at) / 1000;
      for (const p of this.processes) {
        cpu[p.name] = Math.min(cpu[p.name] ?? Infinity, (b.cpu[p.name]! - a.cpu[p.name]!) / dt);
      }
      // The two snapshots' own reads are not the application's; at rest they are most of what is counted.
      statements = Math.min(statements, (b.statements.total - a.statements.total) / dt);
      commands = Math.min(commands, (b.commands.total - a.commands.total) / dt);
      a = b;
    }
    for (const p of this.processes) this.rest.mb[p.name] = memoryMb(p);
    this.rest.cpu = cpu;
    this.rest.statements = statements;
    this.rest.commands = commands;
  }

  /** Runs `drive` and divides what it cost (less the rest rates over its duration) by the units it reports. */
  async window(operation: string, unit: string, drive: () => Promise<{ units: number }>): Promise<Cost> {
    const peakMb: Record<string, number> = {};
    const sample = () => {
      for (const p of this.processes) peakMb[p.name] = Math.max(peakMb[p.name] ?? 0, memoryMb(p));
    };
    const sampler = setInterval(sample, 250);
    const load = loadAverage();
    const a = await this.snapshot();
    let units: number;
    try {
      units = (await drive()).units;
    } finally {
      clearInterval(sampler);
    }
    const b = await this.snapshot();
    sample();
    const dt = (b.at - a.at) / 1000;
    const cpu: Record<string, number> = {};
    let ours = 0;
    for (const p of this.processes) {
      const used = b.cpu[p.name]! - a.cpu[p.name]!;
      ours += used;
      cpu[p.name] = Math.max(0, used - (this.rest.cpu[p.name] ?? 0) * dt) / units;
    }
    const statements = b.statements.total - a.statements.total - this.rest.statements * dt;
    const commands = b.commands.total - a.commands.total - this.rest.commands * dt;
    return {
      operation,
      unit,
      units,
      seconds: dt,
      load,
      cpu,
      statements: Math.max(0, statements) / units,
      controlStatements: (b.statements.control - a.statements.control) / units,
      commands: Math.max(0, commands) / units,
      scriptCommands: (b.commands.scripts - a.commands.scripts) / units,
      restMb: this.rest.mb,
      peakMb,
      othersCores: Math.max(0, (b.machine - a.machine - ours) / dt),
    };
  }
}

export interface LoadTarget {
  url: string;
  headers: Record<string, string>;
  body: string;
}

/** Bounded autocannon runs against `targets` at once, `connections` each; the number of 2xx answers. */
export async function cannon(targets: LoadTarget[], connections: number, seconds: number): Promise<number> {
  const results = await Promise.all(
    targets.map((t) =>
      autocannon({ url: t.url, method: "POST", headers: t.headers, body: t.body, connections, duration: seconds }),
    ),
  );
  let ok = 0;
  for (const [i, r] of results.entries()) {
    if (r.errors + r.non2xx > 0) throw new Error(`${targets[i]!.url}: ${r.errors + r.non2xx} requests failed`);
    ok += r["2xx"];
  }
  return ok;
}
