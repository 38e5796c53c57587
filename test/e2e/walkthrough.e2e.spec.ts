/**
 * The documented walk, run as written: the shell commands of docs/api.md's walkthrough, then of README.md's
 * "Using it" (curl, then `mdp`), read from the markdown and run in document order with bash against the real gateway
 * and both workers, so that the docs and the system cannot drift apart. Each command must succeed (curl: HTTP 2xx;
 * mdp: exit 0), and where the docs show an answer the real one must match it (ids, tokens and times aside). A failure
 * names the doc line of the command that broke.
 *
 * Only what must differ in a test is rewritten (rewrite(), PRELUDE), and what the docs leave to the reader (a token, a
 * task id) is filled from the previous command's real answer (PLACEHOLDERS). The commands run in a directory of the
 * test's own, holding owned.yaml (cli/README.md's example file) and the CLI's stored login.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { eventually } from "@mdp/core/testing";
import { documentedCommands, fenceAfter, mismatches, parsePattern, type DocCommand } from "../support/doc-commands";
import { startSystem, type StartedSystem } from "../support/services";

const ROOT = path.resolve(__dirname, "..", "..");

const COMMANDS: DocCommand[] = [
  ...documentedCommands(ROOT, "docs/api.md", "## Walkthrough: from nothing to an evaluated test"),
  ...documentedCommands(ROOT, "README.md", "## Using it"),
];

/** `mdp tests create owned.yaml` (README.md) creates the example file of cli/README.md. */
const OWNED_YAML = fenceAfter(ROOT, "cli/README.md", "Example file for `mdp tests create`", "yaml");

const UUID = /\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/g;

function at(answer: unknown, dotted: string): string {
  const value = dotted.split(".").reduce<unknown>((v, k) => (v as Record<string, unknown> | undefined)?.[k], answer);
  if (typeof value !== "string") throw new Error(`the previous answer has no ${dotted}: ${JSON.stringify(answer)}`);
  return value;
}

/** What the docs leave to the reader, each filled from the previous command's real (JSON) answer. */
const PLACEHOLDERS: Array<{ pattern: RegExp; fill: (previous: unknown) => string }> = [
  // `TOKEN=eyJ...` / `TOKEN=...`: "the accessToken above"
  { pattern: /^TOKEN=\S+/m, fill: (previous) => `TOKEN=${at(previous, "data.createAccessToken.accessToken")}` },
  // README: the truncation task just started (`{"value":"<task id>"}`)
  { pattern: /<taskId>/g, fill: (previous) => at(previous, "value") },
  // docs/api.md step 7: the task id runTest answered, written as the one its example answer shows
  { pattern: UUID, fill: (previous) => at(previous, "data.runTest") },
];

/** What the docs say in words of a command's output, where a doc once said it wrongly. */
const CLAIMS: Array<{ pattern: RegExp; says: string; holds: (stdout: string) => boolean }> = [
  {
    pattern: /^pnpm mdp truncate (?!.*--execute)/,
    says: "README: the CLI's cutoff is past the curl example's, so its truncation still finds rows to delete",
    holds: (stdout) => /^Delete [1-9][\d,]* out of/m.test(stdout),
  },
];

/** What must differ in a test: the gateway's address, the database, and the CLI (the workspace's, a config of its own). */
function rewrite(text: string, baseHost: string, databaseUrl: string): string {
  return text.replaceAll("localhost:8080", baseHost).replace(/DATABASE_URL=\S+/g, `DATABASE_URL=${databaseUrl}`);
}

/**
 * Defined before each command: curl reports the HTTP status and fails on an error status (keeping the body); `pnpm mdp`
 * is the workspace's CLI and any other pnpm command runs in the workspace, as from its root.
 */
const PRELUDE = `
curl() { command curl --fail-with-body -w '%{stderr}HTTP %{http_code}\\n' "$@"; }
pnpm() { if [ "$1" = mdp ]; then shift; node "$WALK_MDP" "$@"; else command pnpm --dir "$WALK_ROOT" "$@"; fi; }
`;

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

describe("the documented walk (docs/api.md's walkthrough, then README.md's 'Using it')", () => {
  it("reads the commands from the docs: each answer they show parses, each placeholder is there to fill", () => {
    expect(COMMANDS.filter((c) => c.where.startsWith("docs/api.md")).length).toBeGreaterThanOrEqual(10);
    expect(COMMANDS.filter((c) => c.where.startsWith("README.md")).length).toBeGreaterThanOrEqual(10);
    for (const command of COMMANDS) if (command.answer !== undefined) parsePattern(command.answer);
    for (const { pattern } of [...PLACEHOLDERS, ...CLAIMS])
      expect([pattern, COMMANDS.some((c) => c.code.search(pattern) >= 0)]).toEqual([pattern, true]);
    expect(OWNED_YAML).toContain("id: owned");
    // README's "Using it" holds for a reader who starts there, not after docs/api.md: each dataset its commands name is
    // ingested by one of its own commands before (`mdp tests evaluate` once named one only docs/api.md ingests: exit 3).
    const readme = COMMANDS.filter((c) => c.where.startsWith("README.md"));
    const ingests = (c: DocCommand, urn: string) => /action=ingestProposal/.test(c.code) && c.code.includes(urn);
    for (const [i, command] of readme.entries())
      for (const urn of command.code.match(/urn:li:dataset:\([^)]*\)/g) ?? [])
        if (!ingests(command, urn))
          expect([command.where, urn, readme.slice(0, i).some((c) => ingests(c, urn))]).toEqual([
            command.where,
            urn,
            true,
          ]);
    // The matcher holds the stable fields: a task not yet completed does not pass for the documented one.
    const step7 = COMMANDS.find((c) => c.answer?.includes('"state":"completed"'))!;
    const progress = { total: 2, evaluated: 2, passing: 1, failing: 1, pushed: 0 };
    const answer = (state: string) => ({ value: { taskId: "x", type: "EVALUATE_TESTS", state, progress } });
    expect(mismatches(parsePattern(step7.answer!), answer("completed"))).toEqual([]);
    expect(mismatches(parsePattern(step7.answer!), answer("active"))).toEqual([
      '$.value.state: expected "completed", got "active"',
    ]);
  });

  describe("run in order against the real system", () => {
    let system: StartedSystem | undefined;
    let work: string;
    let baseHost: string;
    /** variables the commands set (TOKEN), kept for the next ones */
    const variables: Record<string, string> = {};
    /** the previous command's answer, parsed when JSON */
    let previous: unknown;
    /** the first command that broke: the ones after it are not run */
    let broken: string | undefined;

    beforeAll(async () => {
      work = mkdtempSync(path.join(os.tmpdir(), "mdp-walk-"));
      writeFileSync(path.join(work, "owned.yaml"), OWNED_YAML);
      system = await startSystem("e2e_walkthrough");
      baseHost = system.host;
    }, 120_000);

    afterAll(async () => {
      await system?.stop();
      if (work) rmSync(work, { recursive: true, force: true });
    });

    function bash(script: string, stdin: string): Promise<Run> {
      // a reader's shell: no login or database of the test runner's own, so the docs must say where each comes from
      const { MDP_URL: _url, MDP_TOKEN: _token, DATABASE_URL: _database, ...inherited } = process.env;
      const child = spawn("bash", ["--noprofile", "--norc", "-c", `${PRELUDE}\n${script}`], {
        cwd: work,
        env: {
          ...inherited,
          ...variables,
          XDG_CONFIG_HOME: path.join(work, "config"),
          WALK_MDP: path.join(ROOT, "cli", "bin", "mdp.cjs"),
          WALK_ROOT: ROOT,
        },
        stdio: ["pipe", "pipe", "pipe"],
      });
      let stdout = "";
      let stderr = "";
      child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
      child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
      child.stdin.on("error", () => {}); // EPIPE: a command that exits without reading its input
      child.stdin.end(stdin);
      return new Promise((resolve) => child.on("close", (code) => resolve({ code, stdout, stderr })));
    }

    /**
     * What went wrong with one run of the command: `failed` when the command itself did not succeed (the ones after it
     * are not run), or only `problems` when its answer is not the documented one. `answer`: its stdout, when JSON.
     */
    function judge(command: DocCommand, run: Run): { failed: boolean; problems: string[]; answer?: unknown } {
      const isCurl = /^curl\b/.test(command.code);
      const status = /^HTTP (\d+)$/m.exec(run.stderr)?.[1];
      if (run.code !== 0 || (isCurl && !status?.startsWith("2")))
        return { failed: true, problems: [`exit ${run.code}${isCurl ? `, HTTP ${status}` : ""}`] };
      const claim = CLAIMS.find(({ pattern }) => pattern.test(command.code));
      if (claim && !claim.holds(run.stdout)) return { failed: false, problems: [`not so: ${claim.says}`] };
      if (!isCurl) return { failed: false, problems: [] };
      let answer: unknown;
      try {
        answer = JSON.parse(run.stdout);
      } catch {
        return { failed: true, problems: [`the answer is not JSON`] };
      }
      if (typeof answer === "object" && answer && "errors" in answer)
        return { failed: true, problems: ["the GraphQL answer holds errors"], answer };
      const problems = command.answer === undefined ? [] : mismatches(parsePattern(command.answer), answer);
      return { failed: false, problems, answer };
    }

    it.each(COMMANDS.map((command) => [`${command.where} ${command.text.split("\n")[0]!.slice(0, 90)}`, command]))(
      "%s",
      async (_title, command) => {
        if (broken) throw new Error(`not run: ${broken} broke first`);
        broken = command.where;
        let script = rewrite(command.code, baseHost, system!.databaseUrl);
        // one placeholder at most: a filled-in task id must not be taken for the docs' example one
        const placeholder = PLACEHOLDERS.find(({ pattern }) => script.search(pattern) >= 0);
        if (placeholder) script = script.replace(placeholder.pattern, placeholder.fill(previous));
        const assigned = /^([A-Za-z_]\w*)=\S*$/.exec(script)?.[1];
        if (assigned) script += `\nprintf '%s' "$${assigned}"`;
        // mdp login asks for the token; without a terminal it reads it from stdin
        const stdin = /\bmdp login\b/.test(script) ? `${variables.TOKEN ?? ""}\n` : "";
        // A read (no request body) may show a later state than the system has reached yet: ask again until it does.
        const isRead = /^curl\b/.test(command.code) && !/\s-d\s/.test(command.code);
        let last: (ReturnType<typeof judge> & { run: Run }) | undefined;
        const matched = await eventually(
          command.where,
          async () => {
            const run = await bash(script, stdin);
            last = { run, ...judge(command, run) };
            return last.problems.length === 0;
          },
          { timeoutMs: isRead && command.answer !== undefined ? 15_000 : 0 },
        ).catch(() => false);
        const { run, failed, problems, answer } = last!;
        if (!failed) {
          if (assigned) variables[assigned] = run.stdout;
          previous = answer;
          broken = undefined;
        }
        if (!matched)
          throw new Error(
            `${command.where}: ${problems.join("\n  ")}\n$ ${script}\n--- stdout\n${run.stdout}\n--- stderr\n${run.stderr}`,
          );
      },
      60_000,
    );
  });
});
