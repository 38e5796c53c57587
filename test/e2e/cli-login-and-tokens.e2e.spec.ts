/**
 * mdp, the admin CLI (cli/README.md), as an operator runs it against the real gateway and workers as processes
 * (test/support/cli.ts): logging in and out, tokens (created, scoped, rotated, revoked), service accounts, policies, and the
 * confirmation and tables a terminal gets.
 */
import { readFileSync, statSync } from "node:fs";
import path from "node:path";
import { ADMIN, CUTOFF, cliHarness, NOBODY } from "../support/cli";
import { waitFor } from "../support/services";

describe("mdp, the admin CLI", () => {
  const cli = cliHarness("e2e-cli-login-and-tokens");
  const { mdp, mdpOnTerminal, graphql, mintToken } = cli;
  let baseUrl: string;
  let home: string;
  let adminToken: string;
  let nobodyToken: string;

  beforeAll(async () => {
    ({ baseUrl, home, adminToken, nobodyToken } = await cli.start({}));
  }, 120_000);
  afterAll(() => cli.stop());

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
});
