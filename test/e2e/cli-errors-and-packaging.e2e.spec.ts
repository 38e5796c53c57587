/**
 * mdp, the admin CLI (cli/README.md), as an operator runs it against the real gateway and workers as processes
 * (test/support/cli.ts): the errors scripts rely on (exit codes and messages), the help of every command, and the
 * packed package installed on its own.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { cliHarness, ROOT } from "../support/cli";
import { freePort } from "../support/services";

describe("mdp, the admin CLI", () => {
  const cli = cliHarness("e2e-cli-errors-and-packaging");
  const { mdp, asAdmin } = cli;
  let baseUrl: string;
  let nobodyToken: string;

  beforeAll(async () => {
    ({ baseUrl, nobodyToken } = await cli.start({}));
  }, 120_000);
  afterAll(() => cli.stop());

  describe("errors scripts can rely on", () => {
    it("401: a token the server refuses is exit 2 with its message", async () => {
      const run = await mdp(["index-sizes"], { env: { MDP_URL: baseUrl, MDP_TOKEN: "garbage" } });
      expect(run).toMatchObject({ code: 2, stdout: "", stderr: "mdp: Unable to verify the provided token.\n" });
    });

    it("403: a missing privilege is exit 2 with the server's message; with --json one JSON line on stderr", async () => {
      const env = { MDP_URL: baseUrl, MDP_TOKEN: nobodyToken };
      const run = await mdp(["index-sizes"], { env });
      expect(run.code).toBe(2);
      expect(run.stderr).toMatch(/^mdp: urn:li:corpuser:nobody is unauthorized to get time-series index sizes/);
      const json = await mdp(["truncate", "dataset", "datasetProfile", "--older-than", "90d", "--json"], { env });
      expect(json.code).toBe(2);
      expect(json.stdout).toBe("");
      expect(JSON.parse(json.stderr)).toEqual({
        error: { message: expect.stringContaining("is unauthorized to"), exitCode: 2, status: 403, code: "FORBIDDEN" },
      });
    });

    it("404: an unknown task or aspect is exit 3 with the server's message", async () => {
      const task = await mdp(["tasks", "status", "no-such-task"], { env: asAdmin() });
      expect(task.code).toBe(3);
      expect(task.stderr).toMatch(/^mdp: .*no-such-task/);
      const aspect = await mdp(["truncate", "dataset", "noSuchAspect", "--older-than", "90d"], { env: asAdmin() });
      expect(aspect.code).toBe(3);
      expect(aspect.stderr).toContain("datasetProfile"); // the server lists the known ones
    });

    it("400: input the server refuses is exit 1 naming the field; a usage error is exit 1 before any request", async () => {
      const run = await mdp(["tests", "evaluate", "not-a-urn"], { env: asAdmin() });
      expect(run.code).toBe(1);
      expect(run.stderr).toMatch(/^mdp: .*urn.*not-a-urn/);
      expect(run.stderr).not.toMatch(/^\s+at /m);
      const usage = await mdp(["truncate", "dataset", "datasetProfile", "--older-than", "last tuesday"], {
        env: asAdmin(),
      });
      expect(usage).toMatchObject({ code: 1, stderr: expect.stringContaining("--older-than 'last tuesday' is not") });
      const missing = await mdp(["truncate", "dataset", "--older-than", "90d"], { env: asAdmin() });
      expect(missing.code).toBe(1);
      expect(missing.stderr).toContain("missing required argument 'aspect'");
    });

    it("an unreachable server is exit 4, saying so", async () => {
      const run = await mdp(["index-sizes"], {
        env: { MDP_URL: `http://127.0.0.1:${await freePort()}`, MDP_TOKEN: "x" },
      });
      expect(run.code).toBe(4);
      expect(run.stderr).toMatch(/^mdp: cannot reach http:\/\/127\.0\.0\.1:\d+: connection refused/);
    });

    it("an unknown command is a usage error with a suggestion (exit 1), never a group's help with exit 0", async () => {
      const typo = await mdp(["tokens", "revok", "x"]);
      expect(typo).toMatchObject({
        code: 1,
        stdout: "",
        stderr: "mdp: unknown command 'revok' for mdp tokens: did you mean mdp tokens revoke?\n",
      });
      expect((await mdp(["tokns", "list"])).stderr).toBe(
        "mdp: unknown command 'tokns' for mdp: did you mean mdp tokens?\n",
      );
      for (const args of [
        ["tokens", "foo"],
        ["tokens", "foo", "--help"],
        ["help", "tokens", "foo"],
        ["tokens", "help", "foo"],
      ]) {
        const run = await mdp(args);
        expect([args.join(" "), run.code, run.stdout, run.stderr]).toEqual([
          args.join(" "),
          1,
          "",
          "mdp: unknown command 'foo' for mdp tokens: mdp tokens --help lists them\n",
        ]);
      }
      const json = await mdp(["tests", "evaluat", "--json"]);
      expect(JSON.parse(json.stderr)).toMatchObject({
        error: { exitCode: 1, message: expect.stringContaining("did you mean mdp tests evaluate?") },
      });
    });

    it("--help works on every command and lists the exit codes", async () => {
      const top = await mdp(["--help"]);
      expect(top.code).toBe(0);
      expect(top.stdout).toContain("Exit codes:");
      for (const command of [
        ["login"],
        ["tokens", "create"],
        ["tokens", "list"],
        ["tokens", "revoke"],
        ["tokens", "revoke-all"],
        ["index-sizes"],
        ["truncate"],
        ["tasks", "list"],
        ["tasks", "status"],
        ["tasks", "cancel"],
        ["tasks", "watch"],
        ["tests", "create"],
        ["tests", "list"],
        ["tests", "evaluate"],
      ]) {
        const help = await mdp([...command, "--help"]);
        expect([command.join(" "), help.code, help.stdout]).toEqual([
          command.join(" "),
          0,
          expect.stringContaining(`Usage: mdp ${command.join(" ")}`),
        ]);
        expect(help.stdout).toContain("--json");
      }
    });
  });

  it("installs on its own: the packed package holds no sources and runs mdp from its dist/", async () => {
    const out = mkdtempSync(path.join(os.tmpdir(), "mdp-pack-"));
    try {
      const pack = spawnSync("pnpm", ["--filter", "@mdp/cli", "pack", "--pack-destination", out], {
        cwd: ROOT,
        encoding: "utf8",
        timeout: 120_000,
      });
      expect([pack.status, pack.stderr]).toEqual([0, expect.anything()]);
      const tarball = path.join(out, "mdp-cli-0.1.0.tgz");
      const files = spawnSync("tar", ["tzf", tarball], { encoding: "utf8" }).stdout.split("\n").filter(Boolean);
      expect(files).toEqual(
        expect.arrayContaining(["package/bin/mdp.cjs", "package/dist/main.js", "package/package.json"]),
      );
      expect(files.filter((f) => f.includes("/src/") || f.endsWith(".ts"))).toEqual([]);
      expect(spawnSync("tar", ["xzf", tarball, "-C", out]).status).toBe(0);
      // its dependencies as an installer would put them beside it; nothing of the workspace
      const help = spawnSync(process.execPath, [path.join(out, "package", "bin", "mdp.cjs"), "--help"], {
        encoding: "utf8",
        env: { PATH: process.env.PATH, NODE_PATH: path.join(ROOT, "cli", "node_modules") },
      });
      expect([help.status, help.stderr]).toEqual([0, ""]);
      expect(help.stdout).toContain("Usage: mdp");
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  }, 120_000);
});
