/**
 * The process supervisor of `pnpm start`: runs each service as a child process and restarts one that dies (a crash,
 * out of memory, kill -9, or any exit it did not ask for) after an exponential backoff, while the others keep running.
 *
 * A small supervisor rather than a library (pm2, forever-monitor): those run a daemon or a second process tree of
 * their own, which `pnpm start` would then have to stop alongside its private PostgreSQL and Redis, and none of them
 * knows about those; the policy here is ~100 lines, the same as pm2's `exp_backoff_restart_delay`.
 *
 * Policy: the first restart waits `initialDelayMs`, each further crash in a row doubles the wait up to `maxDelayMs`;
 * a run of at least `healthyAfterMs` resets the count. A service that keeps dying immediately is retried forever at
 * the maximum wait (each exit logged, saying so): giving up would stop the whole system because of one service, which
 * is what this supervisor is here to prevent, and a cause outside the process (PostgreSQL down, a port taken) may go
 * away. Nothing is restarted once `stop()` was called.
 */
import { spawn, type ChildProcess, type SpawnOptions } from "node:child_process";
import { createInterface } from "node:readline";

export interface ServiceSpec {
  name: string;
  command: string;
  args: string[];
}

export interface SupervisorOptions {
  /** wait before the first restart after a crash */
  initialDelayMs: number;
  /** the longest wait between restarts */
  maxDelayMs: number;
  /** a run this long counts as healthy: the next crash waits `initialDelayMs` again */
  healthyAfterMs: number;
  /** on stop, how long a service has to exit after SIGTERM before it gets SIGKILL */
  stopTimeoutMs: number;
  /** spawn options shared by every service (stdout and stderr are always piped) */
  spawnOptions: Omit<SpawnOptions, "stdio">;
  /** one line of a service's output, or null for the supervisor's own messages */
  output(service: string | null, line: string): void;
}

/** `pnpm start`'s values: 0.5 s doubling to 30 s, reset after 30 s up (pm2's reset), 35 s to stop (services take 25). */
export const START_SUPERVISION = {
  initialDelayMs: 500,
  maxDelayMs: 30_000,
  healthyAfterMs: 30_000,
  stopTimeoutMs: 35_000,
} as const;

/** The wait before restarting after the `crashesInARow`-th crash in a row (1-based). */
export function restartDelayMs(
  crashesInARow: number,
  options: Pick<SupervisorOptions, "initialDelayMs" | "maxDelayMs">,
) {
  const doublings = Math.min(Math.max(crashesInARow - 1, 0), 30); // 2^30 × anything is past any maximum
  return Math.min(options.initialDelayMs * 2 ** doublings, options.maxDelayMs);
}

interface Supervised {
  spec: ServiceSpec;
  child: ChildProcess | null;
  startedAt: number;
  crashesInARow: number;
  restartTimer: NodeJS.Timeout | null;
  exited: Promise<void>;
}

export class Supervisor {
  private readonly services: Supervised[];
  private stopping = false;

  constructor(
    specs: ServiceSpec[],
    private readonly options: SupervisorOptions,
  ) {
    this.services = specs.map((spec) => ({
      spec,
      child: null,
      startedAt: 0,
      crashesInARow: 0,
      restartTimer: null,
      exited: Promise.resolve(),
    }));
  }

  start(): void {
    for (const service of this.services) this.run(service);
  }

  /** The pid of a service's current process, if it is running. */
  pid(name: string): number | undefined {
    return this.services.find((service) => service.spec.name === name)?.child?.pid;
  }

  /** Stops every service (SIGTERM, SIGKILL after `stopTimeoutMs`) and restarts none from now on. */
  async stop(): Promise<void> {
    this.stopping = true;
    await Promise.all(
      this.services.map(async (service) => {
        if (service.restartTimer) clearTimeout(service.restartTimer);
        service.restartTimer = null;
        const child = service.child;
        if (!child) return;
        const kill = setTimeout(() => {
          this.say(
            `${service.spec.name} (pid ${child.pid}) did not stop within ${seconds(this.options.stopTimeoutMs)}: SIGKILL`,
          );
          child.kill("SIGKILL");
        }, this.options.stopTimeoutMs);
        child.kill("SIGTERM");
        await service.exited;
        clearTimeout(kill);
      }),
    );
  }

  private run(service: Supervised): void {
    const { name, command, args } = service.spec;
    const child = spawn(command, args, { ...this.options.spawnOptions, stdio: ["ignore", "pipe", "pipe"] });
    service.child = child;
    service.startedAt = Date.now();
    for (const stream of [child.stdout, child.stderr]) {
      createInterface({ input: stream! }).on("line", (line) => this.options.output(name, line));
    }
    service.exited = new Promise((resolve) => {
      let done = false;
      const onExit = (code: number | null, signal: NodeJS.Signals | null, error?: Error) => {
        if (done) return;
        done = true;
        service.child = null;
        this.exited(service, child.pid, code, signal, error);
        resolve();
      };
      child.once("exit", (code, signal) => onExit(code, signal));
      // A process that could not be started at all emits "error" and may never emit "exit".
      child.once("error", (error) => {
        if (child.pid === undefined) onExit(null, null, error);
      });
    });
    if (child.pid !== undefined) this.say(`${name} started (pid ${child.pid})`);
  }

  private exited(
    service: Supervised,
    pid: number | undefined,
    code: number | null,
    signal: NodeJS.Signals | null,
    error?: Error,
  ): void {
    const { name } = service.spec;
    const how = error
      ? `could not start: ${error.message}`
      : signal
        ? `was killed by ${signal}`
        : `exited with code ${code}`;
    const ranMs = Date.now() - service.startedAt;
    if (this.stopping) {
      this.say(`${name} (pid ${pid}) stopped (${signal ?? `code ${code}`})`);
      return;
    }
    // A run long enough to call healthy starts the count afresh: an occasional crash restarts quickly.
    service.crashesInARow = ranMs >= this.options.healthyAfterMs ? 1 : service.crashesInARow + 1;
    const delay = restartDelayMs(service.crashesInARow, this.options);
    const keepsCrashing =
      delay >= this.options.maxDelayMs
        ? `; it keeps dying, so it is retried every ${seconds(delay)} until it stays up or pnpm start is stopped`
        : "";
    this.say(
      `${name} (pid ${pid ?? "none"}) ${how} after ${seconds(ranMs)}; restarting it in ${seconds(delay)} ` +
        `(crash ${service.crashesInARow} in a row)${keepsCrashing}`,
    );
    service.restartTimer = setTimeout(() => {
      service.restartTimer = null;
      if (!this.stopping) this.run(service);
    }, delay);
  }

  private say(line: string): void {
    this.options.output(null, line);
  }
}

function seconds(ms: number): string {
  return `${Number((ms / 1000).toFixed(1))} s`;
}
