/**
 * mdp, the admin CLI (cli/README.md), as an operator runs it: the real CLI process (node cli/bin/mdp.cjs) against
 * the real gateway and both workers as processes, on a database, queue prefix and config dir of this test's own.
 * Terminal behaviour (progress bar, Ctrl-C asking whether to cancel) runs under a pseudo-terminal (util-linux script).
 */
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { createDatabase, inTransaction, TimeseriesStore, type Database, type TimeseriesRow } from "@mdp/db";
import { createTestDatabase } from "@mdp/db/testing";
import {
  freePort,
  startService,
  systemClient,
  uniqueName,
  waitFor,
  waitForOutput,
  waitUntilReady,
  type RunningService,
} from "../support/services";
import { startReceiver } from "../../services/gateway/test/support/webhook-receiver";

const ROOT = path.resolve(__dirname, "..", "..");
const MDP = path.join(ROOT, "cli", "bin", "mdp.cjs");
const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";
const ADMIN = "urn:li:corpuser:admin";
const NOBODY = "urn:li:corpuser:nobody";
const DAY = 86_400_000;
/** three UTC days of datasetProfile rows: the first wholly old, the cutoff in the middle of the second */
const DAY0 = Date.UTC(2023, 10, 1);
const CUTOFF = DAY0 + DAY + 12 * 3_600_000;
/** one day of datasetUsageStatistics rows that a task deletes one per batch: long enough to watch and interrupt */
const SLOW_ROWS = 20_000;
const SLOW_SPACING = DAY / 2 / SLOW_ROWS;
/** every slow row but the last goes */
const SLOW_CUTOFF = DAY0 + (SLOW_ROWS - 1) * SLOW_SPACING;

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

describe("mdp, the admin CLI", () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  let database: Database;
  let services: RunningService[] = [];
  let baseUrl: string;
  let home: string;
  let adminToken: string;
  let nobodyToken: string;
  const prefix = uniqueName("e2e-cli");

  /** the CLI as a script runs it: no terminal, a config dir of this test's own */
  function mdp(args: string[], { env = {}, input }: { env?: Record<string, string>; input?: string } = {}) {
    const { MDP_URL: _u, MDP_TOKEN: _t, ...inherited } = process.env;
    const child = spawn(process.execPath, [MDP, ...args], {
      cwd: ROOT,
      env: { ...inherited, HOME: home, XDG_CONFIG_HOME: path.join(home, "config"), ...env },
      stdio: ["pipe", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    child.stdin.end(input);
    return new Promise<Run>((resolve) => child.on("close", (code) => resolve({ code, stdout, stderr })));
  }

  /** `pnpm mdp …` from the workspace's root, as the README runs it, without a terminal */
  function pnpmMdp(args: string[], env: Record<string, string> = {}) {
    const { MDP_URL: _u, MDP_TOKEN: _t, ...inherited } = process.env;
    return spawnSync("pnpm", ["mdp", ...args], {
      cwd: ROOT,
      encoding: "utf8",
      env: { ...inherited, HOME: home, XDG_CONFIG_HOME: path.join(home, "config"), ...env },
    });
  }

  /**
   * the CLI on a terminal (a pseudo-terminal of `script`, `columns` wide, 120 by default): what it printed, keys to
   * type, its exit; `viaPnpm` runs it as `pnpm mdp …` does
   */
  function mdpOnTerminal(args: string[], { columns = 120, viaPnpm = false } = {}) {
    const quote = (a: string) => `'${a.replace(/'/g, "'\\''")}'`;
    const command = viaPnpm
      ? `exec pnpm mdp ${args.map(quote).join(" ")}`
      : `exec '${process.execPath}' ${[MDP, ...args].map(quote).join(" ")}`;
    const child = spawn("script", ["-qfec", `stty cols ${columns}; ${command}`, "/dev/null"], {
      cwd: ROOT,
      env: { ...process.env, HOME: home, XDG_CONFIG_HOME: path.join(home, "config"), MDP_URL: "", MDP_TOKEN: "" },
      stdio: ["pipe", "pipe", "pipe"],
    });
    let output = "";
    child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.on("close", (code) => resolve(code)));
    return {
      output: () => output,
      type: (keys: string) => child.stdin.write(keys),
      exited,
      /** until the terminal has shown `what` (`times` times) */
      waitFor: (what: RegExp, times = 1) =>
        waitFor(
          `the terminal to show ${what}${times > 1 ? ` ${times} times` : ""}`,
          async () => (output.match(new RegExp(what.source, "g")) ?? []).length >= times,
          30_000,
        ).catch((error: Error) => {
          throw new Error(`${error.message}; it shows:\n${output}`);
        }),
      kill: () => child.kill("SIGKILL"),
    };
  }

  async function graphql(actor: string, query: string, variables: Record<string, unknown> = {}) {
    const res = await fetch(`${baseUrl}/api/graphql`, {
      method: "POST",
      headers: systemClient(actor),
      body: JSON.stringify({ query, variables }),
    });
    return (await res.json()) as { data: Record<string, Record<string, unknown>> };
  }

  async function mintToken(actorUrn: string): Promise<string> {
    const { data } = await graphql(
      ADMIN,
      "mutation($input: GetAccessTokenInput!) { createAccessToken(input: $input) { accessToken } }",
      // A year: the tokens mdp creates with it (a month by default) may not outlive it.
      { input: { type: "PERSONAL", actorUrn, duration: "ONE_YEAR", name: "e2e" } },
    );
    return data.createAccessToken!.accessToken as string;
  }

  async function loadRows(entityType: string, aspectName: string, rows: TimeseriesRow[]): Promise<void> {
    const store = new TimeseriesStore(database.pool);
    const ref = { entityType, aspectName };
    await store.prepare([{ ...ref, rows }]);
    await inTransaction(database.pool, (client) => store.append(client, ref, rows));
  }

  const rowsAt = (times: number[]): TimeseriesRow[] =>
    times.map((t, i) => ({
      urn: `urn:li:dataset:(urn:li:dataPlatform:hive,t${i % 10},PROD)`,
      timestampMillis: t,
      valueJson: JSON.stringify({ timestampMillis: t, rowCount: i }),
    }));

  const asAdmin = () => ({ MDP_URL: baseUrl, MDP_TOKEN: adminToken });

  beforeAll(async () => {
    home = mkdtempSync(path.join(os.tmpdir(), "mdp-cli-"));
    db = await createTestDatabase("e2e_cli");
    database = createDatabase(db.url);
    const port = await freePort();
    baseUrl = `http://127.0.0.1:${port}`;
    const env = { DATABASE_URL: db.url, REDIS_URL, QUEUE_PREFIX: prefix, PORT: String(port) };
    const gateway = startService("gateway", env);
    services = [
      gateway,
      startService("truncation-worker", env),
      startService("evaluation-worker", env),
      startService("webhook-worker", env),
    ];
    await Promise.all([
      waitUntilReady(baseUrl, gateway),
      ...services.slice(1).map((worker) => waitForOutput(worker, "worker running")),
    ]);
    [adminToken, nobodyToken] = await Promise.all([mintToken(ADMIN), mintToken(NOBODY)]);
    // 1,000 rows on day 0, 1,000 on day 1 (500 before the cutoff), 500 on day 2
    const spread = (day: number, n: number, span: number) =>
      Array.from({ length: n }, (_, i) => DAY0 + day * DAY + Math.floor((i * span) / n));
    await loadRows(
      "dataset",
      "datasetProfile",
      rowsAt([...spread(0, 1000, DAY), ...spread(1, 1000, DAY), ...spread(2, 500, DAY)]),
    );
    await loadRows(
      "dataset",
      "datasetUsageStatistics",
      rowsAt(Array.from({ length: SLOW_ROWS }, (_, i) => DAY0 + i * SLOW_SPACING)),
    );
  }, 120_000);

  afterAll(async () => {
    await Promise.all(services.map((s) => s.stop()));
    await database?.close();
    await db?.drop();
    if (home) rmSync(home, { recursive: true, force: true });
  });

  describe("login", () => {
    it("refuses a token the server does not accept, with the server's reason, exit 2, and stores nothing", async () => {
      const run = await mdp(["login", baseUrl], { input: "not-a-token\n" });
      expect(run).toMatchObject({ code: 2, stdout: "" });
      expect(run.stderr).toBe("mdp: Unable to verify the provided token.\n");
      expect(() => statSync(path.join(home, "config", "mdp", "config.json"))).toThrow();
    });

    it("verifies the token, stores it readable by the user only (0600 in a 0700 dir), and uses it afterwards", async () => {
      const run = await mdp(["login", baseUrl], { input: `${adminToken}\n` });
      expect(run.stderr).toBe("");
      expect(run.code).toBe(0);
      const file = path.join(home, "config", "mdp", "config.json");
      expect(run.stdout).toContain(`logged in to ${baseUrl} as ${ADMIN}`);
      expect(statSync(file).mode & 0o777).toBe(0o600);
      expect(statSync(path.dirname(file)).mode & 0o777).toBe(0o700);
      expect(JSON.parse(readFileSync(file, "utf8"))).toEqual({ url: baseUrl, token: adminToken, urn: ADMIN });

      const whoami = await mdp(["whoami", "--json"]);
      expect(whoami.code).toBe(0);
      expect(JSON.parse(whoami.stdout)).toMatchObject({ url: baseUrl, urn: ADMIN });
      expect((JSON.parse(whoami.stdout) as { privileges: string[] }).privileges).toContain("TRUNCATE_TIMESERIES_INDEX");
    });

    it("lets MDP_URL and MDP_TOKEN override the stored login, and never sends the stored token to another server", async () => {
      const asNobody = await mdp(["whoami", "--json"], { env: { MDP_URL: baseUrl, MDP_TOKEN: nobodyToken } });
      expect(JSON.parse(asNobody.stdout)).toEqual({ url: baseUrl, urn: NOBODY, privileges: [] });
      const elsewhere = await mdp(["whoami"], { env: { MDP_URL: "http://127.0.0.1:9" } });
      expect(elsewhere.code).toBe(2);
      expect(elsewhere.stderr).toContain(`logged in to ${baseUrl}, not to MDP_URL=http://127.0.0.1:9`);
    });

    it("logs out, after which commands say how to log in (exit 2)", async () => {
      const configHome = path.join(home, "logout");
      const env = { XDG_CONFIG_HOME: configHome };
      expect((await mdp(["login", baseUrl, "--token", adminToken], { env })).code).toBe(0);
      expect(await mdp(["logout"], { env })).toMatchObject({ code: 0, stdout: expect.stringContaining("logged out") });
      const after = await mdp(["index-sizes"], { env });
      expect(after).toMatchObject({ code: 2, stderr: expect.stringContaining("not logged in: run mdp login") });
    });
  });

  describe("tokens", () => {
    it("creates a token shown once, lists it, revokes it, after which the server refuses it", async () => {
      const created = await mdp(["tokens", "create", "--name", "ci-pipeline", "--duration", "ONE_WEEK", "--json"]);
      expect(created.code).toBe(0);
      const { accessToken, metadata } = JSON.parse(created.stdout) as {
        accessToken: string;
        metadata: { id: string; name: string; actorUrn: string };
      };
      expect(metadata).toMatchObject({ name: "ci-pipeline", actorUrn: ADMIN });
      expect((await mdp(["whoami"], { env: { MDP_URL: baseUrl, MDP_TOKEN: accessToken } })).code).toBe(0);

      const listed = await mdp(["tokens", "list", "--name", "ci-pipeline", "--json"]);
      expect((JSON.parse(listed.stdout) as { tokens: Array<{ id: string }> }).tokens.map((t) => t.id)).toEqual([
        metadata.id,
      ]);
      const table = await mdp(["tokens", "list", "--owner", "me"]);
      expect(table.code).toBe(0);
      expect(table.stdout).toMatch(new RegExp(`│ ${metadata.id} +│ ci-pipeline +│ ${ADMIN}`));
      expect(table.stdout).toMatch(/showing 1-\d+ of \d+ tokens/);

      // no terminal to ask: refused without --yes, and the token still works
      const unconfirmed = await mdp(["tokens", "revoke", metadata.id]);
      expect(unconfirmed).toMatchObject({
        code: 1,
        stdout: "",
        stderr: `mdp: revoke access token ${metadata.id}: needs --yes when not on a terminal (nothing was done)\n`,
      });
      expect((await mdp(["whoami"], { env: { MDP_URL: baseUrl, MDP_TOKEN: accessToken } })).code).toBe(0);
      const revoked = await mdp(["tokens", "revoke", metadata.id, "--yes"]);
      expect(revoked).toMatchObject({ code: 0, stdout: `revoked token ${metadata.id}\n` });
      const refused = await mdp(["whoami"], { env: { MDP_URL: baseUrl, MDP_TOKEN: accessToken } });
      expect(refused).toMatchObject({ code: 2, stderr: "mdp: Token has been revoked\n" });
      const unknown = await mdp(["tokens", "revoke", "no-such-token", "-y"]);
      expect(unknown).toMatchObject({ code: 3, stderr: "mdp: Access token no-such-token does not exist\n" });
    });

    it("creates tokens without --duration when logged in with the README's month-long token, saying which lifetime", async () => {
      const { data } = await graphql(
        ADMIN,
        "mutation($input: GetAccessTokenInput!) { createAccessToken(input: $input) { accessToken } }",
        { input: { type: "PERSONAL", actorUrn: ADMIN, duration: "ONE_MONTH", name: "cli" } },
      );
      const asReadme = { MDP_URL: baseUrl, MDP_TOKEN: data.createAccessToken!.accessToken as string };
      // A month from now would outlive the token in use by the seconds since it was made: the default is a week.
      const created = await mdp(["tokens", "create", "--name", "readme-default"], { env: asReadme });
      expect(created).toMatchObject({
        code: 0,
        stdout: expect.stringContaining(
          "lifetime: ONE_WEEK (the longest that ends before the token you are logged in with, which expires at",
        ),
      });
      const account = (JSON.parse((await mdp(["service-accounts", "create", "--json"])).stdout) as { urn: string }).urn;
      const minted = await mdp(["service-accounts", "token", account, "--name", "ci", "--json"], { env: asReadme });
      expect(minted).toMatchObject({ code: 0, stderr: expect.stringContaining("lifetime: ONE_WEEK") });
      expect((JSON.parse(minted.stdout) as { metadata: { actorUrn: string } }).metadata.actorUrn).toBe(account);
      // Logged in with a token that outlives a month, the default stays a month.
      const longer = await mdp(["tokens", "create", "--name", "year-default", "--json"]);
      expect(longer).toMatchObject({ code: 0, stderr: "lifetime: ONE_MONTH (the default; --duration sets another)\n" });
    });

    it("creates a scoped token (--scope), which the server holds to its scopes, and lists its scopes", async () => {
      const created = await mdp([
        "tokens",
        "create",
        "--name",
        "reader",
        "--scope",
        "GET_ENTITY",
        "VIEW_TESTS",
        "--json",
      ]);
      expect(created.code).toBe(0);
      const { accessToken, metadata } = JSON.parse(created.stdout) as {
        accessToken: string;
        metadata: { id: string; scopes: string[] };
      };
      expect(metadata.scopes).toEqual(["GET_ENTITY", "VIEW_TESTS"]);
      const asReader = { MDP_URL: baseUrl, MDP_TOKEN: accessToken };
      const truncate = await mdp(["truncate", "dataset", "datasetProfile", "--older-than", String(CUTOFF)], {
        env: asReader,
      });
      expect(truncate).toMatchObject({
        code: 2,
        stderr: expect.stringContaining("the access token's scopes leave out TRUNCATE_TIMESERIES_INDEX"),
      });
      const mint = await mdp(["tokens", "create", "--name", "wider"], { env: asReader });
      expect(mint).toMatchObject({ code: 2, stderr: expect.stringContaining("scopes leave out GENERATE_PERSONAL") });
      const table = await mdp(["tokens", "list", "--name", "reader"]);
      expect(table.stdout).toMatch(
        new RegExp(`│ ${metadata.id} +│ reader +│ ${ADMIN} +│ ${ADMIN} +│ GET_ENTITY, VIEW_TESTS`),
      );
      const unknown = await mdp(["tokens", "create", "--name", "x", "--scope", "READ_ALL"]);
      expect(unknown).toMatchObject({ code: 1, stderr: expect.stringContaining("'READ_ALL' is not a privilege") });
    });

    it("a token rotates itself with a grace window; usage shows what the successor was used for", async () => {
      const created = await mdp(["tokens", "create", "--name", "renewer", "--duration", "ONE_WEEK", "--json"]);
      const { accessToken, metadata } = JSON.parse(created.stdout) as { accessToken: string; metadata: { id: string } };
      const asOld = { MDP_URL: baseUrl, MDP_TOKEN: accessToken };
      const rotated = await mdp(["tokens", "rotate", metadata.id, "--grace", "60", "--json"], { env: asOld });
      expect(rotated.code).toBe(0);
      const next = JSON.parse(rotated.stdout) as {
        accessToken: string;
        metadata: { id: string; name: string; rotatedFromId: string };
      };
      expect(next.metadata).toMatchObject({ name: "renewer", rotatedFromId: metadata.id });
      const asNext = { MDP_URL: baseUrl, MDP_TOKEN: next.accessToken };
      expect((await mdp(["whoami"], { env: asOld })).code).toBe(0); // within its grace window
      expect((await mdp(["whoami"], { env: asNext })).code).toBe(0);
      const again = await mdp(["tokens", "rotate", metadata.id]);
      expect(again).toMatchObject({ code: 1, stderr: expect.stringContaining("was rotated already") });
      const tooLong = await mdp(["tokens", "rotate", next.metadata.id, "--grace", "86401"]);
      expect(tooLong.code).toBe(1);

      // The successor's use (whoami: Query.me), written within a batch.
      await waitFor("the successor's use recorded", async () => {
        const usage = await mdp(["tokens", "usage", next.metadata.id, "--json"]);
        return (JSON.parse(usage.stdout) as { usage: { total: number } }).usage.total > 0;
      });
      const table = await mdp(["tokens", "usage", next.metadata.id]);
      expect(table.code).toBe(0);
      expect(table.stdout).toMatch(/│ Query\.me +│ 1 +│/);
      expect(table.stdout).toMatch(/│ (::ffff:)?127\.0\.0\.1 /);
      const unused = await mdp(["tokens", "list", "--unused-days", "1", "--json"]);
      expect((JSON.parse(unused.stdout) as { tokens: Array<{ id: string }> }).tokens.map((t) => t.id)).not.toContain(
        next.metadata.id,
      );
    });

    it("revoke-all revokes every token of a user at once and says how many; the server refuses them after", async () => {
      const user = "urn:li:corpuser:leaver";
      const tokens = [await mintToken(user), await mintToken(user)];
      expect((await mdp(["tokens", "revoke-all", user])).code).toBe(1); // no terminal, no --yes
      const run = await mdp(["tokens", "revoke-all", user, "--yes"]);
      expect(run).toMatchObject({ code: 0, stdout: `revoked 2 tokens of ${user}\n` });
      for (const token of tokens) {
        const refused = await mdp(["whoami"], { env: { MDP_URL: baseUrl, MDP_TOKEN: token } });
        expect(refused).toMatchObject({ code: 2, stderr: "mdp: Token has been revoked\n" });
      }
      const again = await mdp(["tokens", "revoke-all", user, "--json", "--yes"]);
      expect(JSON.parse(again.stdout)).toEqual({ actorUrn: user, revoked: 0 });
      const nobody = await mdp(["tokens", "revoke-all", ADMIN, "--yes"], {
        env: { MDP_URL: baseUrl, MDP_TOKEN: nobodyToken },
      });
      expect(nobody.code).toBe(2);
    });
  });

  describe("destructive commands on a terminal", () => {
    it("ask first: no (the default) changes nothing, exit 1; yes goes ahead", async () => {
      const created = await mdp(["tokens", "create", "--name", "asked", "--duration", "ONE_DAY", "--json"]);
      const { accessToken, metadata } = JSON.parse(created.stdout) as { accessToken: string; metadata: { id: string } };
      const asIt = { env: { MDP_URL: baseUrl, MDP_TOKEN: accessToken } };
      const question = new RegExp(`revoke access token ${metadata.id}\\? \\[y/N\\] `);

      const declined = mdpOnTerminal(["tokens", "revoke", metadata.id]);
      await declined.waitFor(question);
      declined.type("\r");
      expect(await declined.exited).toBe(1);
      expect(declined.output()).toContain("not confirmed: nothing was done");
      expect((await mdp(["whoami"], asIt)).code).toBe(0);

      const interrupted = mdpOnTerminal(["tokens", "revoke", metadata.id]);
      await interrupted.waitFor(question);
      interrupted.type("\x03");
      expect(await interrupted.exited).toBe(130);
      expect((await mdp(["whoami"], asIt)).code).toBe(0);

      const confirmed = mdpOnTerminal(["tokens", "revoke", metadata.id]);
      await confirmed.waitFor(question);
      confirmed.type("y\r");
      expect(await confirmed.exited).toBe(0);
      expect(confirmed.output()).toContain(`revoked token ${metadata.id}`);
      expect((await mdp(["whoami"], asIt)).code).toBe(2);
    });
  });

  describe("service accounts", () => {
    it("creates one, lists it, mints a token it acts through, deletes it, after which its token is refused", async () => {
      const created = await mdp(["service-accounts", "create", "--display-name", "nightly ingestion", "--json"]);
      expect(created.code).toBe(0);
      const { urn } = JSON.parse(created.stdout) as { urn: string };
      expect(urn).toMatch(/^urn:li:corpuser:service_/);
      const table = await mdp(["service-accounts", "list", "--query", "nightly"]);
      expect(table.stdout).toMatch(new RegExp(`│ ${urn.replace(/[()]/g, "\\$&")} +│ nightly ingestion +│ ${ADMIN}`));
      expect(table.stdout).toMatch(/showing 1-1 of 1 service account$/m);

      const minted = await mdp(["service-accounts", "token", urn, "--name", "ci", "--duration", "ONE_WEEK", "--json"]);
      expect(minted.code).toBe(0);
      const { accessToken, metadata } = JSON.parse(minted.stdout) as {
        accessToken: string;
        metadata: { actorUrn: string };
      };
      expect(metadata.actorUrn).toBe(urn);
      const asAccount = { MDP_URL: baseUrl, MDP_TOKEN: accessToken };
      const who = await mdp(["whoami", "--json"], { env: asAccount });
      expect(JSON.parse(who.stdout)).toMatchObject({ urn });

      expect((await mdp(["service-accounts", "delete", urn])).code).toBe(1); // no terminal, no --yes
      expect((await mdp(["whoami"], { env: asAccount })).code).toBe(0);
      const deleted = await mdp(["service-accounts", "delete", urn, "--yes"]);
      expect(deleted).toMatchObject({
        code: 0,
        stdout: `deleted ${urn}: its tokens are revoked, its work suspended\n`,
      });
      expect((await mdp(["whoami"], { env: asAccount })).code).toBe(2);
      const again = await mdp(["service-accounts", "delete", urn, "--yes"]);
      expect(again.code).toBe(3);
      const nobody = await mdp(["service-accounts", "list"], { env: { MDP_URL: baseUrl, MDP_TOKEN: nobodyToken } });
      expect(nobody.code).toBe(2);
    });
  });

  describe("policies", () => {
    it("grants a service account privileges as service-accounts create says to, lists the policy, deletes it", async () => {
      const created = await mdp(["service-accounts", "create", "--display-name", "granted"]);
      const urn = /│ urn +│ (\S+) +│/.exec(created.stdout)![1]!;
      const next = /^next: grant it privileges \((mdp policies create [^)]*)\)/m.exec(created.stdout);
      expect(next?.[1]).toBe(`mdp policies create --name <name> --privilege <PRIVILEGE...> --user ${urn}`);

      const granted = await mdp([
        "policies",
        "create",
        "--name",
        "granted",
        "--privilege",
        "GET_ENTITY",
        "VIEW_TESTS",
        "--user",
        urn,
        "--json",
      ]);
      expect(granted.code).toBe(0);
      const policy = JSON.parse(granted.stdout) as { urn: string; state: string };
      expect(policy).toMatchObject({ urn: expect.stringMatching(/^urn:li:dataHubPolicy:/), state: "ACTIVE" });
      const token = JSON.parse(
        (await mdp(["service-accounts", "token", urn, "--name", "ci", "--duration", "ONE_DAY", "--json"])).stdout,
      ) as { accessToken: string };
      const asAccount = { env: { MDP_URL: baseUrl, MDP_TOKEN: token.accessToken } };
      const privileges = async () =>
        (JSON.parse((await mdp(["whoami", "--json"], asAccount)).stdout) as { privileges: string[] }).privileges;
      expect(await privileges()).toEqual(expect.arrayContaining(["GET_ENTITY", "VIEW_TESTS"]));

      const listed = await mdp(["policies", "list", "--query", "granted", "--wide"]);
      expect(listed.stdout).toMatch(
        new RegExp(`│ ${policy.urn} +│ granted +│ ACTIVE +│ GET_ENTITY, VIEW_TESTS +│ ${urn} +│`),
      );
      expect(listed.stdout).toMatch(/showing 1-1 of 1 policy$/m);
      const nobodyList = await mdp(["policies", "list"], { env: { MDP_URL: baseUrl, MDP_TOKEN: nobodyToken } });
      expect(nobodyList.code).toBe(2);
      expect((await mdp(["policies", "grant", "--name", "x", "--privilege", "GET_ENTITY"])).code).toBe(1); // whom?

      expect((await mdp(["policies", "delete", policy.urn])).code).toBe(1); // no terminal, no --yes
      expect(await privileges()).toEqual(expect.arrayContaining(["GET_ENTITY"]));
      const deleted = await mdp(["policies", "delete", policy.urn, "--yes", "--json"]);
      expect(deleted.code).toBe(0);
      expect(JSON.parse(deleted.stdout)).toEqual({ urn: policy.urn, deleted: true });
      await waitFor("the grant withdrawn", async () => !(await privileges()).includes("GET_ENTITY"), 10_000);
      expect((await mdp(["policies", "delete", policy.urn, "--yes"])).code).toBe(3);
      const root = (
        JSON.parse((await mdp(["policies", "list", "--json"])).stdout) as {
          policies: Array<{ urn: string; editable: boolean }>;
        }
      ).policies.find((p) => !p.editable)!;
      expect((await mdp(["policies", "delete", root.urn, "--yes"])).code).toBe(2);
    });
  });

  describe("tables on a narrow terminal", () => {
    it("keep every id whole on its line, leave out what does not fit (saying so), and --wide shows all", async () => {
      for (const name of ["a-token-with-a-rather-long-name-to-cut", "another"]) {
        expect((await mdp(["tokens", "create", "--name", name, "--duration", "ONE_DAY"])).code).toBe(0);
      }
      const ids = (
        JSON.parse((await mdp(["tokens", "list", "--owner", "me", "--count", "5", "--json"])).stdout) as {
          tokens: Array<{ id: string; name: string }>;
        }
      ).tokens.map((t) => t.id);
      expect(ids.length).toBeGreaterThanOrEqual(2);
      const ESC = String.fromCharCode(27);
      const plain = (text: string) => text.replace(new RegExp(`${ESC}\\[[0-9;?]*[a-zA-Z]`, "g"), "");

      const narrow = mdpOnTerminal(["tokens", "list", "--owner", "me", "--count", "5"], { columns: 80 });
      expect(await narrow.exited).toBe(0);
      const lines = plain(narrow.output()).split(/\r?\n/);
      const rows = lines.filter((line) => line.includes("│"));
      expect(Math.max(...rows.map((line) => line.length))).toBeLessThanOrEqual(80);
      for (const id of ids) expect(rows.filter((line) => line.includes(id))).toHaveLength(1);
      expect(rows[0]).toMatch(/│ id +│ name +│/);
      expect(rows[0]).not.toContain("last used");
      expect(lines.join("\n")).toMatch(/\(.*last used.* left out to fit the terminal: --wide shows them\)/);

      const wide = mdpOnTerminal(["tokens", "list", "--owner", "me", "--count", "5", "--wide"], { columns: 80 });
      expect(await wide.exited).toBe(0);
      const head = plain(wide.output())
        .split(/\r?\n/)
        .find((line) => line.includes("│ id "))!;
      expect(head).toMatch(/│ id +│ name +│ actor +│ owner +│ scopes +│ created +│ expires +│ last used +│/);
      expect(plain(wide.output())).toContain("a-token-with-a-rather-long-name-to-cut");
    });
  });

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

  describe("webhooks", () => {
    it("subscribes a receiver (secret shown once), shows its delivery log, replays with the same event id, turns it off and deletes it", async () => {
      const receiver = await startReceiver();
      try {
        const created = await mdp([
          "webhooks",
          "create",
          receiver.url,
          "--event-type",
          "MetadataChangeLog_v1",
          "--json",
        ]);
        expect(created.code).toBe(0);
        const { secret, subscription } = JSON.parse(created.stdout) as { secret: string; subscription: { id: string } };
        expect(secret).toMatch(/^whsec_/);
        const listed = await mdp(["webhooks", "list"]);
        expect(listed.stdout).toContain(subscription.id);

        const entity = "urn:li:dataset:(urn:li:dataPlatform:hive,db.hooked,PROD)";
        const ingested = await fetch(`${baseUrl}/gms/aspects?action=ingestProposal`, {
          method: "POST",
          headers: systemClient(ADMIN),
          body: JSON.stringify({
            proposal: {
              entityType: "dataset",
              entityUrn: entity,
              aspectName: "datasetProperties",
              changeType: "UPSERT",
              aspect: { contentType: "application/json", value: JSON.stringify({ description: "hooked" }) },
            },
          }),
        });
        expect(ingested.status).toBe(200);
        await waitFor("the receiver got the event", async () => receiver.received.length >= 1, 30_000);
        const eventId = receiver.received[0]!.headers["mdp-event-id"];

        const log = await mdp(["webhooks", "deliveries", subscription.id, "--json"]);
        const { deliveries } = JSON.parse(log.stdout) as { deliveries: Array<{ eventId: string; status: string }> };
        expect(deliveries).toEqual([expect.objectContaining({ eventId, status: "DELIVERED" })]);
        const table = await mdp(["webhooks", "deliveries", subscription.id]);
        expect(table.stdout).toMatch(/DELIVERED/);

        const replayed = await mdp(["webhooks", "replay", subscription.id, "--since", "1h"]);
        expect(replayed).toMatchObject({ code: 0, stdout: "replaying 1 delivery\n" });
        await waitFor("the replay arrived", async () => receiver.received.length >= 2, 30_000);
        expect(receiver.received[1]!.headers["mdp-event-id"]).toBe(eventId);

        expect((await mdp(["webhooks", "disable", subscription.id])).stdout).toBe(
          `subscription ${subscription.id} is off\n`,
        );
        expect((await mdp(["webhooks", "delete", subscription.id])).code).toBe(1); // no terminal, no --yes
        expect((await mdp(["webhooks", "delete", subscription.id, "--yes"])).code).toBe(0);
        expect((await mdp(["webhooks", "deliveries", subscription.id])).code).toBe(3);
      } finally {
        await receiver.close();
      }
    });
  });

  describe("metadata tests", () => {
    const entity = "urn:li:dataset:(urn:li:dataPlatform:hive,db.orders,PROD)";

    beforeAll(async () => {
      const res = await fetch(`${baseUrl}/gms/aspects?action=ingestProposal`, {
        method: "POST",
        headers: systemClient(ADMIN),
        body: JSON.stringify({
          proposal: {
            entityType: "dataset",
            entityUrn: entity,
            aspectName: "datasetProperties",
            changeType: "UPSERT",
            aspect: { contentType: "application/json", value: JSON.stringify({ description: "orders" }) },
          },
        }),
      });
      expect(res.status).toBe(200);
    });

    it("creates tests from a whole-test YAML file and from a bare definition with --name/--category, and lists them", async () => {
      const whole = path.join(home, "owned.yaml");
      writeFileSync(
        whole,
        "id: owned\nname: Datasets have an owner\ncategory: Ownership\ndefinition:\n  on: {types: [dataset]}\n  rules:\n    - {property: ownership.owners.owner, operator: exists}\n",
      );
      expect(await mdp(["tests", "create", whole])).toMatchObject({
        code: 0,
        stdout: "created test urn:li:test:owned\n",
      });
      const bare = path.join(home, "described.json");
      writeFileSync(
        bare,
        JSON.stringify({
          on: { types: ["dataset"] },
          rules: [{ property: "datasetProperties.description", operator: "exists" }],
        }),
      );
      const created = await mdp([
        "tests",
        "create",
        bare,
        "--id",
        "described",
        "--name",
        "Described",
        "--category",
        "Docs",
        "--json",
      ]);
      expect(JSON.parse(created.stdout)).toEqual({ urn: "urn:li:test:described" });

      const listed = await mdp(["tests", "list"]);
      expect(listed.stdout).toMatch(
        /│ urn:li:test:owned +│ Datasets have an owner +│ Ownership +│ ACTIVE +│ dataset +│/,
      );
      expect(listed.stdout).toContain("showing 1-2 of 2 tests");
    });

    it("refuses an invalid definition with the server's message and exit 1", async () => {
      const bad = path.join(home, "bad.yaml");
      writeFileSync(
        bad,
        "name: Bad\ncategory: X\ndefinition:\n  on: {types: [dataset]}\n  rules: [{property: urn, operator: sounds_like, value: x}]\n",
      );
      const run = await mdp(["tests", "create", bad]);
      expect(run.code).toBe(1);
      expect(run.stderr).toMatch(/^mdp: Failed to validate test definition: /);
    });

    it("evaluates an entity: passing and failing tests, each failing rule with what it expected and found", async () => {
      const json = await mdp(["tests", "evaluate", entity, "--json"]);
      expect(json.code).toBe(0);
      const result = JSON.parse(json.stdout) as {
        passing: Array<{ test: string }>;
        failing: Array<{ test: string; failedRules: Array<{ message: string }> }>;
      };
      expect(result.passing.map((r) => r.test)).toEqual(["urn:li:test:described"]);
      expect(result.failing.map((r) => r.test)).toEqual(["urn:li:test:owned"]);
      const message = result.failing[0]!.failedRules[0]!.message;

      const table = await mdp(["tests", "evaluate", entity]);
      expect(table.code).toBe(0);
      expect(table.stdout).toMatch(/│ PASS +│ urn:li:test:described +│/);
      expect(table.stdout).toMatch(/│ FAIL +│ urn:li:test:owned +│ rules\S*: ownership\.owners\.owner exists +│/);
      expect(table.stdout).toContain(message);
      expect(table.stdout).toContain("1 passing, 1 failing");

      const gate = await mdp(["tests", "evaluate", entity, "--test", "urn:li:test:owned", "--exit-code"]);
      expect(gate.code).toBe(6);
      const passes = await mdp(["tests", "evaluate", entity, "--test", "urn:li:test:described", "--exit-code"]);
      expect(passes.code).toBe(0);
    });

    it("shows the actions a push would take, then took, then finds nothing left to change", async () => {
      const file = path.join(home, "tagged.yaml");
      writeFileSync(
        file,
        // Off, so that creating it pushes nothing by itself: the pushes below are the ones asked for.
        "id: tagged\nname: Owned or marked\ncategory: Ownership\nevaluateOnChange: false\ndefinition:\n" +
          "  on: {types: [dataset]}\n" +
          "  rules:\n    - {property: ownership.owners.owner, operator: exists}\n" +
          "  actions:\n    failing: [{type: ADD_TAGS, params: {values: ['urn:li:tag:unowned']}}]\n",
      );
      expect((await mdp(["tests", "create", file])).code).toBe(0);
      const only = ["--test", "urn:li:test:tagged"];
      const row = (state: string) =>
        new RegExp(`│ urn:li:test:tagged +│ ADD_TAGS +│ values: urn:li:tag:unowned +│ ${state} +│`);

      expect((await mdp(["tests", "evaluate", entity, ...only])).stdout).toMatch(row("would change"));
      const pushed = await mdp(["tests", "evaluate", entity, ...only, "--push"]);
      expect(pushed.stdout).toMatch(/│ test +│ action +│ params +│ push +│/);
      expect(pushed.stdout).toMatch(row("changed"));
      expect((await mdp(["tests", "evaluate", entity, ...only, "--push"])).stdout).toMatch(row("no change"));
    });

    it("shows since when a pushed result holds (tests history), and schedules a test (tests create --schedule)", async () => {
      // The pushes above stored one result of urn:li:test:tagged: failing, its first.
      const history = await mdp(["tests", "history", entity, "urn:li:test:tagged"]);
      expect(history.code).toBe(0);
      expect(history.stdout).toMatch(/^failing since /);
      expect(history.stdout).toMatch(/│ FAIL +│ \(first result\) +│/);
      const json = JSON.parse((await mdp(["tests", "history", entity, "urn:li:test:tagged", "--json"])).stdout) as {
        total: number;
        transitions: Array<{ type: string; previousType: string | null }>;
      };
      expect(json).toMatchObject({ total: 1, transitions: [{ type: "FAILURE", previousType: null }] });

      const file = path.join(home, "nightly.yaml");
      writeFileSync(file, "on: {types: [dataset]}\nrules: [{property: urn, operator: exists}]\n");
      const named = ["--id", "nightly", "--name", "Nightly", "--category", "Ops"];
      const tooOften = await mdp(["tests", "create", file, ...named, "--schedule", "*/30 * * * * *"]);
      expect(tooOften.code).toBe(1);
      expect(tooOften.stderr).toMatch(
        /input\.schedule\.cron: '\*\/30 \* \* \* \* \*' fires 30 s apart .*at most once every 60 s/,
      );
      expect((await mdp(["tests", "create", file, ...named, "--schedule", "0 3 * * *"])).code).toBe(0);
      expect((await mdp(["tests", "list"])).stdout).toMatch(
        /│ urn:li:test:nightly +│ Nightly +│ Ops +│ ACTIVE +│ dataset +│ 0 3 \* \* \*, next /,
      );
    });

    it("shows what a run changed since the test's previous run (tests diff)", async () => {
      const file = path.join(home, "described.yaml");
      writeFileSync(
        file,
        // Off, so that creating it starts no run by itself: the run below is the first.
        "id: run-diffed\nname: Run diffed\ncategory: Docs\nevaluateOnChange: false\ndefinition:\n" +
          "  on: {types: [dataset]}\n  rules: [{property: datasetProperties.description, operator: exists}]\n",
      );
      expect((await mdp(["tests", "create", file])).code).toBe(0);
      const none = await mdp(["tests", "diff", "urn:li:test:run-diffed"]);
      expect(none).toMatchObject({ code: 3, stderr: expect.stringMatching(/has no recorded run/) });
      const { data } = await graphql(
        ADMIN,
        `
          mutation {
            runTest(urn: "urn:li:test:run-diffed")
          }
        `,
      );
      const runId = data.runTest as unknown as string;
      await waitFor(
        `run ${runId} completed`,
        async () => {
          const status = JSON.parse((await mdp(["tasks", "status", runId, "--json"])).stdout) as { state: string };
          return status.state === "completed";
        },
        30_000,
      );
      const diff = await mdp(["tests", "diff", "urn:li:test:run-diffed", runId]);
      expect(diff.code).toBe(0);
      expect(diff.stdout).toMatch(new RegExp(`^run ${runId} of urn:li:test:run-diffed: \\d+ entities evaluated`));
      expect(diff.stdout).toMatch(
        /│ urn:li:dataset:\(urn:li:dataPlatform:hive,db\.orders,PROD\) +│ was without a result +│/,
      );
      expect(diff.stdout).toMatch(/│ newly passing +│/);
      // one line per list; flapping's says what counts as flapping
      expect(diff.stdout.match(/^flapping:/gm)).toHaveLength(1);
      expect(diff.stdout).toMatch(/^flapping: 0 \(more than \d+ changes? in the last \d+ runs?, since .+\)$/m);
      const json = JSON.parse((await mdp(["tests", "diff", "urn:li:test:run-diffed", "--json"])).stdout) as Record<
        string,
        unknown
      >;
      expect(json).toMatchObject({ runId, newlyPassing: { truncated: false } });

      // Before saving an edit: orders would fail a rule it cannot meet; nothing is saved.
      const edited = path.join(home, "run-diffed-edited.yaml");
      writeFileSync(
        edited,
        "on: {types: [dataset]}\nrules: [{property: datasetProperties.description, operator: contains_str, value: zzz}]\n",
      );
      const preview = await mdp(["tests", "preview", "urn:li:test:run-diffed", edited]);
      expect(preview.code).toBe(0);
      expect(preview.stdout).toMatch(
        /^urn:li:test:run-diffed, edited: evaluated on all \d+ entities .*; nothing was saved$/m,
      );
      expect(preview.stdout).toMatch(/│ pass → fail +│ [1-9]\d* +│ .*db\.orders/);
      const impact = JSON.parse(
        (await mdp(["tests", "preview", "urn:li:test:run-diffed", edited, "--sample", "1", "--json"])).stdout,
      ) as Record<string, unknown>;
      expect(impact).toMatchObject({ sampled: 1, sampleSize: 1 });

      // Saving what was previewed: the same file; a bare definition keeps the test's name and category.
      const saved = await mdp(["tests", "update", "urn:li:test:run-diffed", edited]);
      expect(saved).toMatchObject({ code: 0, stdout: "updated test urn:li:test:run-diffed\n" });
      const stored = await graphql(
        ADMIN,
        `
          {
            test(urn: "urn:li:test:run-diffed") {
              name
              category
              definition {
                json
              }
            }
          }
        `,
      );
      expect(stored.data.test).toMatchObject({
        name: "Run diffed",
        category: "Docs",
        definition: { json: readFileSync(edited, "utf8") },
      });
      const renamed = await mdp(["tests", "update", "urn:li:test:run-diffed", edited, "--name", "Renamed", "--json"]);
      expect(JSON.parse(renamed.stdout)).toEqual({ urn: "urn:li:test:run-diffed", updated: true });
      expect((await mdp(["tests", "update", "urn:li:test:absent", edited])).code).toBe(3);
    });
  });

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
