/**
 * Every example a reader runs, run as a reader would: the shell (```sh, ```bash, ```shell) and JavaScript (```js)
 * blocks of README.md and then docs/*.md (alphabetically: docs/api.md first), top to bottom in one sitting, against a
 * fresh system (the gateway and both workers on an empty database). Variables a block sets are there for the blocks
 * after it, as in a reader's terminal. A command succeeds when it exits 0, and a curl when it is answered 2xx and, if
 * the answer is GraphQL's, without `errors`. A failure names the file, the block's first line and the command.
 *
 * A block marked `<!-- example: not run: <why> -->` just before its fence (docs/api.md, "Examples that run")
 * is reported as skipped with its reason, never run: one that installs packages, starts a long-running server or needs
 * a machine this test does not have. Everything a reader would fill in is filled in as a reader would:
 * - an id the docs show in an answer (a uuid, or a shortened `5b0c…`) and use in a later command stands for the real
 *   one that answer gave (answered());
 * - `TOKEN=...` (an assignment left to the reader, "the accessToken above") takes the previous answer's accessToken;
 * - `<taskId>` takes the previous answer's `value`.
 * Only the addresses differ: the gateway's (`localhost:8080`, `127.0.0.1:8080`) is the test's, and any other URL (a
 * webhook receiver such as https://hooks.example.com/mdp) is a receiver this test runs on 127.0.0.1, so no example
 * sends traffic, or makes a name lookup, beyond this machine. JavaScript blocks run as ES modules without the built-ins
 * Node.js 20 (the engines floor) lacks; a block exporting `verify` (docs/webhooks.md) must accept a delivery the
 * receiver really got and refuse it forged.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { eventually } from "@mdp/core/testing";
import {
  fenceAfter,
  fileExamples,
  parsePattern,
  type DocCommand,
  type DocExample,
  type Pattern,
} from "../support/doc-commands";
import { startSystem, type StartedSystem } from "../support/services";

const ROOT = path.resolve(__dirname, "..", "..");

const FILES = [
  "README.md",
  ...readdirSync(path.join(ROOT, "docs"))
    .filter((name) => name.endsWith(".md"))
    .sort()
    .map((name) => `docs/${name}`),
];
const EXAMPLES: DocExample[] = FILES.flatMap((file) => fileExamples(ROOT, file).examples);
const RUN = EXAMPLES.filter((example) => example.notRun === undefined);
const NOT_RUN = EXAMPLES.filter((example) => example.notRun !== undefined);

/** The variables the examples set (`TOKEN=…`, `DATABASE_URL=… pnpm …`): none is taken from the test's environment. */
const ASSIGNED = [
  ...new Set(
    RUN.flatMap((e) => e.commands).flatMap((c) =>
      [...c.code.matchAll(/(?:^|[\s;&|(])([A-Za-z_]\w*)=/g)].map((m) => m[1]!),
    ),
  ),
];

/** A URL's scheme and authority (user info, host, port): up to its path, a quote or a JSON-escaped string's end. */
const URL_AUTHORITY = /https?:\/\/[^\s"'/\\]+/g;

/**
 * A command as the test runs it: the gateway (`localhost:8080`, `127.0.0.1:8080`) is the test's, and every other URL
 * the receiver's (`http://127.0.0.1:<port>`), its path kept; DATABASE_URL is the test's database.
 */
function onThisMachine(text: string, to: { gateway: string; receiver: string; databaseUrl: string }): string {
  const local = text
    .replace(/(https?:\/\/)?(localhost|127\.0\.0\.1):8080\b/g, `http://${to.gateway}`)
    .replace(/DATABASE_URL=\S+/g, `DATABASE_URL=${to.databaseUrl}`)
    .replace(URL_AUTHORITY, (url) => (url === `http://${to.gateway}` ? url : to.receiver));
  const outside = [...local.matchAll(URL_AUTHORITY)].find(
    ([url]) => url !== `http://${to.gateway}` && url !== to.receiver,
  );
  if (outside) throw new Error(`an address beyond this machine is left: ${outside[0]}`);
  return local;
}

/** `mdp tests create owned.yaml` (README.md) creates the example file of cli/README.md. */
const OWNED_YAML = fenceAfter(ROOT, "cli/README.md", "Example file for `mdp tests create`", "yaml");

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * The values a documented answer shows that a later command may use: each uuid, and each string shortened with `…`
 * (`urn:li:retentionPolicy:5b0c…`, `whsec_3q…`; at least four characters before it, so `eyJ…` and `…` are not taken),
 * paired with what the real answer holds in its place.
 */
function answered(pattern: Pattern, actual: unknown, found: Map<string, string>): void {
  if (pattern.kind === "value") {
    const shown = pattern.value;
    const shortened = typeof shown === "string" && /^[^…]{4,}…$/.test(shown);
    if (typeof shown === "string" && typeof actual === "string" && shown !== actual && (UUID.test(shown) || shortened))
      found.set(shown, actual);
    return;
  }
  if (pattern.kind === "array") {
    if (Array.isArray(actual)) pattern.items.forEach((item, i) => answered(item, actual[i], found));
    return;
  }
  if (typeof actual !== "object" || actual === null) return;
  for (const [key, member] of pattern.members) answered(member, (actual as Record<string, unknown>)[key], found);
}

/** The first string member named `key` anywhere in `value`. */
function member(value: unknown, key: string): string | undefined {
  if (typeof value !== "object" || value === null) return undefined;
  for (const [k, v] of Object.entries(value)) {
    if (k === key && typeof v === "string") return v;
    const inner = member(v, key);
    if (inner !== undefined) return inner;
  }
  return undefined;
}

/**
 * Defined before each command: curl reports the HTTP status and fails on an error status (keeping the body); `mdp`
 * and `pnpm mdp` are the workspace's CLI, and any other pnpm command runs in the workspace, as from its root. The
 * command then runs under `set -u`: a variable no example defined before is an error, not an empty string.
 */
const PRELUDE = `
set -o pipefail
curl() { command curl --fail-with-body --noproxy '*' -w '%{stderr}HTTP %{http_code}\\n' "$@"; }
mdp() { node "$DOCS_MDP" "$@"; }
pnpm() { if [ "$1" = mdp ]; then shift; mdp "$@"; else command pnpm --dir "$DOCS_ROOT" "$@"; fi; }
`;

/**
 * Loaded before each JavaScript example: the built-ins Node.js 20 (package.json's engines floor) lacks are taken away,
 * so that an example using one fails here even when a newer Node.js runs the tests.
 */
const NODE_20 = `
for (const [owner, names] of [
  [Object, ["groupBy"]],
  [Map, ["groupBy"]],
  [Promise, ["withResolvers"]],
  [Set.prototype, ["union", "intersection", "difference", "symmetricDifference"]],
  [Set.prototype, ["isSubsetOf", "isSupersetOf", "isDisjointFrom"]],
]) for (const name of names) delete owner[name];
`;

/** A command still running after this long fails (a block that starts a server is one to mark as not run). */
const COMMAND_LIMIT_MS = 60_000;

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

interface Delivery {
  headers: http.IncomingHttpHeaders;
  body: string;
}

describe("the examples of README.md and docs/, run in order", () => {
  it("reads them: shell and JavaScript blocks, each shown answer parses, each skipped block says why", () => {
    expect(RUN.filter((e) => e.file === "README.md").length).toBeGreaterThanOrEqual(2);
    expect(RUN.filter((e) => e.file === "docs/api.md").length).toBeGreaterThanOrEqual(15);
    expect(RUN.some((e) => e.file === "docs/webhooks.md" && e.lang === "js")).toBe(true);
    for (const example of RUN)
      for (const command of example.commands)
        if (command.answer !== undefined) expect(() => parsePattern(command.answer!)).not.toThrow();
    for (const example of NOT_RUN) expect(example.notRun!.length).toBeGreaterThan(3);
  });

  it("sends nothing beyond this machine: the gateway's address is the test's, every other URL the receiver's", () => {
    const to = { gateway: "127.0.0.1:1", receiver: "http://127.0.0.1:2", databaseUrl: "postgresql://127.0.0.1:3/db" };
    const commands = RUN.flatMap((e) =>
      e.commands.length > 0
        ? e.commands.map((c) => onThisMachine(c.code, to))
        : [onThisMachine(e.lines.join("\n"), to)],
    );
    const hosts = new Set(commands.flatMap((code) => [...code.matchAll(URL_AUTHORITY)].map(([url]) => url)));
    expect([...hosts].sort()).toEqual(["http://127.0.0.1:1", "http://127.0.0.1:2"]);
    expect(commands.some((code) => code.includes('"url": "http://127.0.0.1:2/mdp"'))).toBe(true);
    expect(onThisMachine(`curl https://user:secret@hooks.example.com:8443/mdp`, to)).toBe(
      `curl http://127.0.0.1:2/mdp`,
    );
  });

  it("names in every example (GraphQL ones too) only datasets an example run before ingests", () => {
    const ingested = new Set<string>();
    const problems: string[] = [];
    for (const file of FILES) {
      const { fences } = fileExamples(ROOT, file);
      for (const fence of fences) {
        const text = fence.lines.join("\n");
        const ingests = /action=ingestProposal/.test(text);
        // an answer shown shortened (`urn:li:dataset:(…sales.orders,PROD)`) names no dataset of its own
        for (const urn of (text.match(/urn:li:dataset:\([^)]*\)/g) ?? []).filter((u) => !u.includes("…"))) {
          if (ingests) ingested.add(urn);
          else if (["sh", "bash", "shell", "js", "graphql"].includes(fence.lang) && !ingested.has(urn))
            problems.push(`${file}:${fence.line - 1}: ${urn}`);
        }
      }
    }
    expect(problems).toEqual([]);
  });

  describe("against a fresh system", () => {
    let system: StartedSystem | undefined;
    let work: string;
    let gatewayHost: string;
    let receiver: http.Server;
    let receiverUrl: string;
    const deliveries: Delivery[] = [];
    /** variables the commands set (TOKEN, MDP), kept for the next ones */
    const variables: Record<string, string> = {};
    /** documented value → the real one (answered()) */
    const values = new Map<string, string>();
    /** the previous command's answer, parsed when JSON */
    let previous: unknown;

    beforeAll(async () => {
      work = mkdtempSync(path.join(os.tmpdir(), "mdp-docs-"));
      writeFileSync(path.join(work, "owned.yaml"), OWNED_YAML);
      writeFileSync(path.join(work, "node-20.cjs"), NODE_20);
      receiver = http.createServer((req, res) => {
        let body = "";
        req.on("data", (chunk: Buffer) => (body += chunk.toString("utf8")));
        req.on("end", () => {
          deliveries.push({ headers: req.headers, body });
          res.writeHead(204).end();
        });
      });
      await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
      const address = receiver.address();
      receiverUrl = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;
      system = await startSystem("e2e_docs_examples");
      gatewayHost = system.host;
    }, 120_000);

    afterAll(async () => {
      await system?.stop();
      await new Promise((resolve) => receiver?.close(resolve));
      if (work) rmSync(work, { recursive: true, force: true });
    });

    const rewrite = (text: string) =>
      onThisMachine(text, { gateway: gatewayHost, receiver: receiverUrl, databaseUrl: system!.databaseUrl });

    function spawnRun(command: string, args: string[], stdin: string, env: Record<string, string> = {}): Promise<Run> {
      // a reader's shell: no login, database or variable of the test runner's own that the docs set, so the docs must
      // say where each comes from
      const inherited = Object.fromEntries(
        Object.entries(process.env).filter(([name]) => !["MDP_URL", "MDP_TOKEN", ...ASSIGNED].includes(name)),
      );
      const child = spawn(command, args, {
        cwd: work,
        env: {
          ...inherited,
          ...variables,
          ...env,
          XDG_CONFIG_HOME: path.join(work, "config"),
          DOCS_MDP: path.join(ROOT, "cli", "bin", "mdp.cjs"),
          DOCS_ROOT: ROOT,
          npm_config_update_notifier: "false",
        },
        stdio: ["pipe", "pipe", "pipe"],
        // its own process group: a command still running after COMMAND_LIMIT_MS is ended with whatever it started
        detached: true,
      });
      let stdout = "";
      let stderr = "";
      const limit = setTimeout(() => {
        stderr += `\n(still running after ${COMMAND_LIMIT_MS} ms: ended)`;
        if (child.pid) process.kill(-child.pid, "SIGKILL");
      }, COMMAND_LIMIT_MS);
      child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
      child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
      child.stdin.on("error", () => {}); // EPIPE: a command that exits without reading its input
      child.stdin.end(stdin);
      return new Promise((resolve) =>
        child.on("close", (code) => {
          clearTimeout(limit);
          resolve({ code, stdout, stderr });
        }),
      );
    }

    /** What the reader fills in: documented ids by the real ones, `TOKEN=...`, `<taskId>`. */
    function fill(code: string): string {
      let script = code;
      for (const shown of [...values.keys()].sort((a, b) => b.length - a.length))
        script = script.replaceAll(shown, values.get(shown)!);
      const leftToReader = /^([A-Za-z_]\w*)=\S*\.\.\.$/.exec(script.trim());
      if (leftToReader) {
        const token = member(previous, "accessToken");
        if (!token) throw new Error(`${leftToReader[1]}=... : the previous answer has no accessToken`);
        script = `${leftToReader[1]}=${token}`;
      }
      if (script.includes("<taskId>")) {
        const taskId = member(previous, "value");
        if (!taskId) throw new Error(`<taskId>: the previous answer has no value`);
        script = script.replaceAll("<taskId>", taskId);
      }
      return script;
    }

    async function runCommand(example: DocExample, command: DocCommand): Promise<void> {
      let script = fill(rewrite(command.code));
      const assigned = /^([A-Za-z_]\w*)=\S*$/.exec(script)?.[1];
      if (assigned) script += `\nprintf '%s' "$${assigned}"`;
      // mdp login asks for the token; without a terminal it reads it from stdin
      const stdin = /\bmdp login\b/.test(script) ? `${variables.TOKEN ?? ""}\n` : "";
      const run = await spawnRun("bash", ["--noprofile", "--norc", "-c", `${PRELUDE}\nset -u\n${script}`], stdin);
      const isCurl = /^curl\b/.test(command.code);
      const status = /^HTTP (\d+)$/m.exec(run.stderr)?.[1];
      let answer: unknown;
      try {
        answer = JSON.parse(run.stdout);
      } catch {
        answer = undefined;
      }
      const problem =
        run.code !== 0 || (isCurl && !status?.startsWith("2"))
          ? `exit ${run.code}${isCurl ? `, HTTP ${status ?? "none"}` : ""}`
          : typeof answer === "object" && answer !== null && "errors" in answer
            ? "the GraphQL answer holds errors"
            : undefined;
      if (problem)
        throw new Error(
          [
            example.title,
            `  ${command.where}: ${problem}`,
            `$ ${script}`,
            `--- stdout\n${run.stdout.slice(0, 3000)}`,
            `--- stderr\n${run.stderr.slice(0, 3000)}`,
          ].join("\n"),
        );
      if (assigned) variables[assigned] = run.stdout;
      previous = answer;
      if (command.answer !== undefined && answer !== undefined) answered(parsePattern(command.answer), answer, values);
    }

    /** Runs a JavaScript block as an ES module; a `verify` it exports must accept a real delivery, not a forged one. */
    async function runScript(example: DocExample): Promise<void> {
      const file = path.join(work, `${path.basename(example.file, ".md")}-${example.line}.mjs`);
      writeFileSync(file, rewrite(example.lines.join("\n")) + "\n");
      const node20 = ["--require", path.join(work, "node-20.cjs")];
      const loaded = await spawnRun(process.execPath, [...node20, file], "");
      if (loaded.code !== 0) throw new Error(`${example.title}: exit ${loaded.code}\n${loaded.stderr}`);
      if (!/^export function verify\b/m.test(example.lines.join("\n"))) return;
      const secret = [...values.entries()].filter(([shown]) => shown.startsWith("whsec_")).at(-1)?.[1];
      if (!secret) throw new Error(`${example.title}: no webhook subscription's secret was answered before it`);
      // an event the subscriptions select: a task ends (a truncation of nothing)
      const before = deliveries.length;
      const started = await fetch(`http://${gatewayHost}/gms/operations?action=truncateTimeseriesAspect`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${variables.TOKEN}` },
        body: JSON.stringify({ entityType: "dataset", aspect: "datasetProfile", endTimeMillis: 1, dryRun: false }),
      });
      expect(started.status).toBe(200);
      const driver = `
        import { verify } from ${JSON.stringify(file)};
        const deliveries = JSON.parse(process.env.DELIVERIES);
        console.log(JSON.stringify(deliveries.map(({ headers, body }) => [
          verify(process.env.SECRET, headers, body),
          verify(process.env.SECRET, headers, body.replace("}", ', "forged": true}')),
        ])));`;
      type Verdicts = { threw: string } | { results: Array<[boolean, boolean]> };
      const verdicts = await eventually<Verdicts | undefined>(
        `${example.title}: verify() accepting a delivery sent after it`,
        async () => {
          const fresh = deliveries.slice(before).map((d) => ({ headers: d.headers, body: d.body }));
          if (fresh.length === 0) return undefined;
          const run = await spawnRun(process.execPath, [...node20, "--input-type=module", "-e", driver], "", {
            DELIVERIES: JSON.stringify(fresh),
            SECRET: secret,
          });
          // a verify() that throws fails at once: asking again would not change it
          if (run.code !== 0) return { threw: run.stderr };
          const results = JSON.parse(run.stdout) as Array<[boolean, boolean]>;
          return results.some(([real]) => real) ? { results } : undefined;
        },
        { timeoutMs: 20_000 },
      );
      if (!verdicts || "threw" in verdicts) throw new Error(`${example.title}: verify() threw\n${verdicts?.threw}`);
      expect(verdicts.results.every(([, forged]) => !forged)).toBe(true);
    }

    for (const example of NOT_RUN) it.skip(`${example.title} (not run: ${example.notRun})`, () => {});

    it.each(RUN.map((example) => [example.title, example] as const))(
      "%s",
      async (_title, example) => {
        if (example.lang === "js" || example.lang === "javascript") await runScript(example);
        else for (const command of example.commands) await runCommand(example, command);
      },
      90_000,
    );
  });
});
