/**
 * mdp, the admin CLI (cli/README.md), as an operator runs it against the real gateway and workers as processes
 * (test/support/cli.ts): truncation and its tasks (dry run, --execute, status, list, watching with a live progress bar,
 * Ctrl-C to rethrottle or cancel), also under `pnpm mdp`.
 */
import { readdirSync, readFileSync } from "node:fs";
import { ADMIN, CUTOFF, cliHarness, SLOW_CUTOFF } from "../support/cli";
import { waitFor } from "../support/services";

describe("mdp, the admin CLI", () => {
  const cli = cliHarness("e2e-cli-truncation");
  const { mdp, pnpmMdp, mdpOnTerminal, asAdmin } = cli;

  beforeAll(async () => {
    await cli.start({ loggedIn: true, truncationRows: true });
  }, 120_000);
  afterAll(() => cli.stop());

  describe("truncation", () => {
    it("shows index sizes as a table, and as JSON", async () => {
      const table = await mdp(["index-sizes"]);
      expect(table.code).toBe(0);
      expect(table.stdout).toMatch(/│ dataset +│ datasetProfile +│ 2,500 +│/);
      const json = await mdp(["index-sizes", "--json"]);
      expect(JSON.parse(json.stdout)).toEqual(
        expect.arrayContaining([
          expect.objectContaining({ entityName: "dataset", aspectName: "datasetProfile", rowCount: 2500 }),
        ]),
      );
    });

    it("dry-runs by default: the server's report, nothing deleted", async () => {
      const run = await mdp(["truncate", "dataset", "datasetProfile", "--older-than", String(CUTOFF)]);
      expect(run.code).toBe(0);
      expect(run.stdout).toContain(`dry run: dataset/datasetProfile rows older than 2023-11-02 12:00:00Z`);
      // the server's sentence, its counts written as every count of the output is; --json keeps it as sent
      expect(run.stdout).toContain("Delete 1,500 out of 2,500 rows (60.00%).");

      expect(run.stdout).toContain("This was a dry run.");
      // the plan under the sentence: the day dropped, the boundary's batches, the estimate
      expect(run.stdout).toMatch(/│ ts_dataset_datasetProfile_p20231101 +│ 2023-11-01 00:00:00Z +│ 1,000 +│ [\d,]+ +│/);
      expect(run.stdout).toMatch(/: 500 of 1,000 rows in 1 batch of 10,000$/m);
      expect(run.stdout).toMatch(/^1 partition: 1,000 rows, [\d,]+ bytes$/m);
      expect(run.stdout).toMatch(/^estimated [\d.]+ s\. /m);
      const iso = await mdp([
        "truncate",
        "dataset",
        "datasetProfile",
        "--older-than",
        "2023-11-02T12:00:00Z",
        "--json",
      ]);
      expect(JSON.parse(iso.stdout)).toMatchObject({ endTimeMillis: CUTOFF, dryRun: true });
      expect((JSON.parse(iso.stdout) as { report: string }).report).toContain("Delete 1500 out of 2500 rows");
      expect(JSON.parse(iso.stdout)).toMatchObject({
        plan: { toDelete: 1500, partitionsToDrop: { count: 1, rows: 1000 } },
      });
      const sizes = JSON.parse((await mdp(["index-sizes", "--json"])).stdout) as Array<{
        aspectName: string;
        rowCount: number;
      }>;
      expect(sizes.find((s) => s.aspectName === "datasetProfile")?.rowCount).toBe(2500);
    });

    let taskId: string;

    it("--execute runs the task to its end without a terminal: a line per change, the deleted count, exit 0", async () => {
      const run = await mdp([
        "truncate",
        "dataset",
        "datasetProfile",
        "--older-than",
        String(CUTOFF),
        "--execute",
        "--batch-size",
        "100",
        "--interval",
        "200",
      ]);
      expect(run.stderr).toBe("");
      expect(run.code).toBe(0);
      const started = /^started task (\S+): deleting dataset\/datasetProfile rows older than/m.exec(run.stdout);
      expect(started).not.toBeNull();
      taskId = started![1]!;
      expect(run.stdout).toMatch(
        new RegExp(
          `^task ${taskId} completed in \\S+: 1,500 rows deleted, 1 partition dropped, [\\d,]+ bytes freed$`,
          "m",
        ),
      );
      const sizes = JSON.parse((await mdp(["index-sizes", "--json"])).stdout) as Array<{
        aspectName: string;
        rowCount: number;
      }>;
      expect(sizes.find((s) => s.aspectName === "datasetProfile")?.rowCount).toBe(1000);
    });

    it("shows a task's status as a table and as JSON; watching a finished task ends at once", async () => {
      const table = await mdp(["tasks", "status", taskId]);
      expect(table.code).toBe(0);
      expect(table.stdout).toMatch(/│ state +│ completed +│/);
      expect(table.stdout).toMatch(/│ progress +│ 1,500 of 1,500 rows deleted \(100%\) +│/);
      const json = JSON.parse((await mdp(["tasks", "status", taskId, "--json"])).stdout) as Record<string, unknown>;
      expect(json).toMatchObject({
        taskId,
        type: "TRUNCATE_TIMESERIES",
        state: "completed",
        progress: { deleted: 1500 },
      });
      const watched = await mdp(["tasks", "watch", taskId, "--json"]);
      expect(watched.code).toBe(0);
      expect(JSON.parse(watched.stdout)).toMatchObject({ taskId, state: "completed" });
    });

    it("lists tasks newest first, filtered by state and creator", async () => {
      const run = await mdp(["tasks", "list", "--state", "completed", "--created-by", "me", "--json"]);
      expect(run.code).toBe(0);
      const page = JSON.parse(run.stdout) as { tasks: Array<{ taskId: string; createdBy: string }> };
      expect(page.tasks[0]).toMatchObject({ taskId, createdBy: ADMIN });
      const table = await mdp(["tasks", "list"]);
      expect(table.stdout).toMatch(new RegExp(`│ ${taskId} +│ TRUNCATE_TIMESERIES +│ completed +│`));
      // On a terminal (120 columns) the table fits it: the widest columns wrap rather than run past the edge.
      const terminal = mdpOnTerminal(["tasks", "list"]);
      expect(await terminal.exited).toBe(0);
      const lines = terminal
        .output()
        .split(/\r?\n/)
        .filter((line) => line.includes("│"));
      expect(lines.length).toBeGreaterThan(0);
      const ESC = String.fromCharCode(27); // the head's colour codes take no column
      const shown = (line: string) => line.replace(new RegExp(`${ESC}\\[[0-9;]*m`, "g"), "").length;
      expect(Math.max(...lines.map(shown))).toBeLessThanOrEqual(120);
    });

    it("on a terminal shows a live progress bar; Ctrl-C asks whether to cancel: no stops watching (exit 130), the task goes on", async () => {
      const terminal = mdpOnTerminal([
        "truncate",
        "dataset",
        "datasetUsageStatistics",
        "--older-than",
        String(SLOW_CUTOFF),
        "--execute",
        "--batch-size",
        "1",
        "--interval",
        "200",
      ]);
      try {
        await terminal.waitFor(/active \|[█░]+\| \d+% \| [\d,]+\/19,999 rows \| [\d,]+ rows\/s \| ETA \S+/);
        const taskId = /watching task (\S+)/.exec(terminal.output())![1]!;
        terminal.type("\x03");
        await terminal.waitFor(
          new RegExp(`cancel task ${taskId}\\? \\[y/N, or a pace in rows/s, or 'none' to unthrottle\\] `),
        );
        terminal.type("n\r");
        expect(await terminal.exited).toBe(130);
        expect(terminal.output()).toContain(`stopped watching; task ${taskId} goes on`);

        const status = JSON.parse((await mdp(["tasks", "status", taskId, "--json"])).stdout) as { state: string };
        expect(["waiting", "active"]).toContain(status.state);
        const cancelled = await mdp(["tasks", "cancel", taskId, "--yes"]);
        expect(cancelled.code).toBe(0);
        expect(cancelled.stdout).toMatch(
          new RegExp(`^(task ${taskId} cancelled|cancellation requested: task ${taskId})`),
        );
        const watched = await mdp(["tasks", "watch", taskId, "--interval", "200"]);
        expect(watched.code).toBe(5);
        expect(watched.stdout).toMatch(new RegExp(`^task ${taskId} cancelled`, "m"));
      } finally {
        terminal.kill();
      }
    });

    it("on a terminal, Ctrl-C and a pace rethrottle the task and keep watching; tasks rethrottle changes it again", async () => {
      const terminal = mdpOnTerminal([
        "truncate",
        "dataset",
        "datasetUsageStatistics",
        "--older-than",
        String(SLOW_CUTOFF),
        "--execute",
        "--batch-size",
        "1",
        "--interval",
        "200",
      ]);
      try {
        await terminal.waitFor(/active \|[█░]+\| \d+%/);
        const taskId = /watching task (\S+)/.exec(terminal.output())![1]!;
        terminal.type("\x03");
        await terminal.waitFor(/\[y\/N, or a pace/);
        terminal.type("3\r");
        await terminal.waitFor(new RegExp(`task ${taskId} paced at 3 rows/s`));
        const status = async () =>
          JSON.parse((await mdp(["tasks", "status", taskId, "--json"])).stdout) as {
            state: string;
            rowsPerSecond: number | null;
            progress: { rowsPerSecond: number | null };
          };
        await waitFor("the worker keeps the pace", async () => (await status()).progress.rowsPerSecond === 3, 10_000);
        expect(await status()).toMatchObject({ state: "active", rowsPerSecond: 3 });
        const table = await mdp(["tasks", "status", taskId]);
        expect(table.stdout).toMatch(/│ pace +│ 3 rows\/s +│/);

        const again = await mdp(["tasks", "rethrottle", taskId, "none"]);
        expect(again.code).toBe(0);
        expect(again.stdout).toContain(`task ${taskId}: throttle removed`);
        const bad = await mdp(["tasks", "rethrottle", taskId, "0"]);
        expect(bad.code).toBe(1);
        expect(bad.stderr).toContain("it must be rows per second, 1-100000000, or 'none'");
        expect((await mdp(["tasks", "cancel", taskId, "--yes"])).code).toBe(0);
        expect(await terminal.exited).toBe(5);
      } finally {
        terminal.kill();
      }
    });

    it("on a terminal, Ctrl-C and yes cancel the task through the server; the watch ends cancelled with exit 5", async () => {
      const terminal = mdpOnTerminal([
        "truncate",
        "dataset",
        "datasetUsageStatistics",
        "--older-than",
        String(SLOW_CUTOFF),
        "--execute",
        "--batch-size",
        "1",
        "--interval",
        "200",
      ]);
      try {
        await terminal.waitFor(/active \|[█░]+\| \d+%/);
        const taskId = /watching task (\S+)/.exec(terminal.output())![1]!;
        terminal.type("\x03");
        await terminal.waitFor(/\[y\/N, or a pace/);
        terminal.type("y\r");
        expect(await terminal.exited).toBe(5);
        expect(terminal.output()).toMatch(new RegExp(`task ${taskId} cancelled`));
        const status = JSON.parse((await mdp(["tasks", "status", taskId, "--json"])).stdout) as Record<string, unknown>;
        expect(status).toMatchObject({ state: "cancelled" });
      } finally {
        terminal.kill();
      }
    });
  });

  describe("under pnpm mdp", () => {
    it("prints only mdp's own output and errors, and exits with mdp's code", () => {
      const version = pnpmMdp(["--version"]);
      expect([version.status, version.stdout, version.stderr]).toEqual([0, "0.1.0\n", ""]);
      const missing = pnpmMdp(["tasks", "status", "no-such-task"], asAdmin());
      expect(missing.status).toBe(3);
      expect(missing.stdout).toBe("");
      expect(missing.stderr).toMatch(/^mdp: [^\n]*no-such-task[^\n]*\n$/);
      const json = pnpmMdp(["tasks", "status", "no-such-task", "--json"], asAdmin());
      expect(json.status).toBe(3);
      expect(JSON.parse(json.stderr)).toMatchObject({ error: { exitCode: 3, status: 404 } });
    });

    it("on a terminal, each Ctrl-C while watching asks again; no stops watching with exit 130 and leaves no process behind", async () => {
      const started = await mdp(
        [
          "truncate",
          "dataset",
          "datasetUsageStatistics",
          "--older-than",
          String(SLOW_CUTOFF),
          "--execute",
          "--no-watch",
          "--batch-size",
          "1",
          "--rows-per-second",
          "100",
          "--json",
        ],
        { env: asAdmin() },
      );
      expect(started.code).toBe(0);
      const { taskId } = JSON.parse(started.stdout) as { taskId: string };
      const terminal = mdpOnTerminal(["tasks", "watch", taskId, "--interval", "200"], { viaPnpm: true });
      const question = new RegExp(`cancel task ${taskId}\\? \\[y/N, or a pace`);
      try {
        await terminal.waitFor(/active \|[█░]+\| \d+%/);
        terminal.type("\x03");
        await terminal.waitFor(question);
        terminal.type("200\r");
        await terminal.waitFor(new RegExp(`task ${taskId} paced at 200 rows/s`));
        // watching again: a second Ctrl-C reaches mdp alone (pnpm ends its command on a second interrupt: exit 143)
        await terminal.waitFor(/active \|[█░]+\| \d+%/, 2);
        terminal.type("\x03");
        await terminal.waitFor(question, 2);
        terminal.type("n\r");
        expect(await terminal.exited).toBe(130);
        expect(terminal.output()).toContain(`stopped watching; task ${taskId} goes on`);
        expect(terminal.output()).not.toMatch(/^\$ |ELIFECYCLE/m);
        // nothing of the watch is left to write on the terminal later
        const watching = readdirSync("/proc")
          .filter((entry) => /^\d+$/.test(entry))
          .filter((pid) => {
            try {
              return readFileSync(`/proc/${pid}/cmdline`, "utf8").includes(taskId);
            } catch {
              return false; // ended meanwhile
            }
          });
        expect(watching).toEqual([]);
      } finally {
        terminal.kill();
        await mdp(["tasks", "cancel", taskId, "--yes"], { env: asAdmin() });
        await mdp(["tasks", "watch", taskId, "--interval", "200"], { env: asAdmin() });
      }
    });
  });
});
