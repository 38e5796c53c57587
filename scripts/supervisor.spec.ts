import { eventually } from "@mdp/core/testing";
import { restartDelayMs, Supervisor, type SupervisorOptions } from "./supervisor";

/** A service that runs `code` in a fresh node process. */
const node = (name: string, code: string) => ({ name, command: process.execPath, args: ["-e", code] });
const RUNS = "setInterval(() => {}, 1000)";
const IGNORES_SIGTERM = `process.on("SIGTERM", () => {}); console.log("up"); ${RUNS}`;

function supervise(specs: ReturnType<typeof node>[], options: Partial<SupervisorOptions> = {}) {
  const lines: string[] = [];
  const starts: Array<{ name: string; at: number }> = [];
  const supervisor = new Supervisor(specs, {
    initialDelayMs: 100,
    maxDelayMs: 400,
    healthyAfterMs: 60_000,
    stopTimeoutMs: 10_000,
    spawnOptions: {},
    output: (service, line) => {
      lines.push(service ? `[${service}] ${line}` : line);
      const started = service ? null : /^(\S+) started/.exec(line);
      if (started) starts.push({ name: started[1]!, at: Date.now() });
    },
    ...options,
  });
  return { supervisor, lines, starts, startsOf: (name: string) => starts.filter((start) => start.name === name) };
}

async function until(what: string, check: () => boolean, timeoutMs = 15_000): Promise<void> {
  await eventually(what, check, { timeoutMs });
}

describe("restartDelayMs", () => {
  it("doubles from the initial wait up to the maximum, and stays there", () => {
    const options = { initialDelayMs: 500, maxDelayMs: 30_000 };
    expect([1, 2, 3, 4, 5, 6, 7, 8, 1000].map((n) => restartDelayMs(n, options))).toEqual([
      500, 1000, 2000, 4000, 8000, 16_000, 30_000, 30_000, 30_000,
    ]);
  });
});

describe("Supervisor", () => {
  it("restarts a service that keeps dying with growing waits, while the others keep their process", async () => {
    const run = supervise([node("crasher", "process.exit(3)"), node("steady", RUNS)]);
    run.supervisor.start();
    const steadyPid = run.supervisor.pid("steady");
    try {
      await until("five starts of the crasher", () => run.startsOf("crasher").length >= 5);
      const at = run.startsOf("crasher").map((start) => start.at);
      const gaps = at.slice(1, 5).map((time, i) => time - at[i]!);
      // waits of 100, 200, 400, 400 ms (plus the time to start a node process)
      [100, 200, 400, 400].forEach((wait, i) => expect(gaps[i]).toBeGreaterThanOrEqual(wait - 5));
      expect(run.lines.join("\n")).toMatch(
        /crasher \(pid \d+\) exited with code 3 after [\d.]+ s; restarting it in 0.1 s \(crash 1 in a row\)\n/,
      );
      expect(run.lines.join("\n")).toMatch(
        /restarting it in 0.4 s \(crash 3 in a row\); it keeps dying, so it is retried every 0.4 s/,
      );
      expect(run.supervisor.pid("steady")).toBe(steadyPid);
      expect(run.startsOf("steady")).toHaveLength(1);
    } finally {
      await run.supervisor.stop();
    }
  });

  it("names the signal that killed a service, and restarts it with a new pid", async () => {
    const run = supervise([node("victim", RUNS)]);
    run.supervisor.start();
    try {
      const first = run.supervisor.pid("victim")!;
      process.kill(first, "SIGKILL");
      await until("a new victim", () => run.startsOf("victim").length === 2);
      expect(run.supervisor.pid("victim")).not.toBe(first);
      expect(run.lines.join("\n")).toContain(`victim (pid ${first}) was killed by SIGKILL after`);
    } finally {
      await run.supervisor.stop();
    }
  });

  it("counts crashes afresh after a healthy run", async () => {
    const run = supervise([node("flaky", "setTimeout(() => process.exit(1), 250)")], { healthyAfterMs: 200 });
    run.supervisor.start();
    try {
      await until("three starts", () => run.startsOf("flaky").length >= 3);
      const crashes = run.lines.filter((line) => line.includes("restarting it in"));
      expect(crashes.length).toBeGreaterThanOrEqual(2);
      for (const line of crashes) expect(line).toContain("restarting it in 0.1 s (crash 1 in a row)");
    } finally {
      await run.supervisor.stop();
    }
  });

  it("restarts nothing once stopped: neither a service waiting for its restart nor one that exits", async () => {
    // The supervisor's timers on a fake clock, moved well past the restart the crasher waits for; the children are
    // real processes, waited for on the real clock.
    const realSetTimeout = setTimeout;
    jest.useFakeTimers({ doNotFake: ["nextTick", "setImmediate", "queueMicrotask"] });
    try {
      const run = supervise([node("crasher", "process.exit(2)"), node("steady", RUNS)], { initialDelayMs: 300 });
      run.supervisor.start();
      for (let waited = 0; !run.lines.some((line) => line.includes("restarting it in 0.3 s")); waited += 20) {
        if (waited > 15_000) throw new Error(`the crasher did not exit: ${run.lines.join("\n")}`);
        await new Promise((resolve) => realSetTimeout(resolve, 20));
      }
      await run.supervisor.stop();
      // Nothing is left armed: a restart timer stop did not clear would fire later, whatever guards it then.
      expect(jest.getTimerCount()).toBe(0);
      const startsAtStop = run.starts.length;
      await jest.advanceTimersByTimeAsync(60_000);
      expect(run.starts).toHaveLength(startsAtStop);
      expect(run.supervisor.pid("steady")).toBeUndefined();
      expect(run.lines.join("\n")).toMatch(/steady \(pid \d+\) stopped \(SIGTERM\)/);
    } finally {
      jest.useRealTimers();
    }
  });

  it("SIGKILLs a service that ignores SIGTERM once the stop timeout passes", async () => {
    const run = supervise([node("stubborn", IGNORES_SIGTERM)], { stopTimeoutMs: 300 });
    run.supervisor.start();
    await until("the service's first line", () => run.lines.includes("[stubborn] up"));
    const stopped = Date.now();
    await run.supervisor.stop();
    expect(Date.now() - stopped).toBeGreaterThanOrEqual(290);
    expect(run.lines.join("\n")).toMatch(/stubborn \(pid \d+\) did not stop within 0.3 s: SIGKILL/);
    expect(run.lines.join("\n")).toMatch(/stubborn \(pid \d+\) stopped \(SIGKILL\)/);
  });
});
