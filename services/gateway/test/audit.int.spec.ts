/**
 * The audit trail (docs/audit.md) against a real gateway, PostgreSQL and Redis: every privileged write leaves exactly
 * one row with actor, action, target and time, read back through listAuditEvents and its filters; a dry run, a refused
 * request and a request that changes nothing leave none.
 */
import { createLogger } from "@mdp/core";
import { QUEUE_NAMES } from "@mdp/queues";
import { TaskLifecycle } from "@mdp/tasks";
import { recordAudit } from "../src/audit/audit.service";
import { ROOT, createToken, grant, startGateway, systemClientHeaders, type Harness } from "./support/gateway-harness";

const OPERATOR = "urn:li:corpuser:audit-operator";
const TRUNCATE = "/gms/operations?action=truncateTimeseriesAspect";
const LIST = `query($input: ListAuditEventsInput!) {
  listAuditEvents(input: $input) { start count total events { id actorUrn action targetUrn details createdAt } }
}`;

interface AuditEvent {
  id: string;
  actorUrn: string;
  action: string;
  targetUrn: string | null;
  details: string;
  createdAt: number;
}
interface AuditPage {
  start: number;
  count: number;
  total: number;
  events: AuditEvent[];
}

describe("audit trail", () => {
  let h: Harness;
  let operatorToken: string;
  const asOperator = systemClientHeaders(OPERATOR);
  const basic = (token: string) => ({ authorization: `Basic ${Buffer.from(`anyone:${token}`).toString("base64")}` });

  const audit = async (input: Record<string, unknown>): Promise<AuditPage> => {
    const res = await h.graphql(LIST, { input }, systemClientHeaders(ROOT));
    if (res.body.errors) throw new Error(JSON.stringify(res.body.errors));
    return res.body.data!.listAuditEvents as AuditPage;
  };
  /** The rows of one action (optionally on one target) written since `since`. */
  const rowsOf = async (action: string, since: number, targetUrn?: string) =>
    (await audit({ action, since, count: 100, ...(targetUrn ? { targetUrn } : {}) })).events;
  const truncate = (body: Record<string, unknown>, as: Record<string, string> = asOperator) =>
    h.post(TRUNCATE, { entityType: "dataset", aspect: "datasetProfile", ...body }, as);
  const dashboard = (method: string, path: string, token = operatorToken) =>
    fetch(`${h.baseUrl}/admin/queues/api/queues/${path}`, { method, headers: basic(token) });

  beforeAll(async () => {
    h = await startGateway();
    await grant(h, OPERATOR, [
      "TRUNCATE_TIMESERIES_INDEX",
      "MANAGE_SYSTEM_OPERATIONS",
      "MANAGE_TESTS",
      "GENERATE_PERSONAL_ACCESS_TOKENS",
    ]);
    operatorToken = (await createToken(h, OPERATOR)).token;
  });
  afterAll(() => h.close());

  describe("truncations and cancellations", () => {
    it("records a truncation task when it is created and each request joining it, none for a dry run", async () => {
      const since = Date.now();
      const dry = await truncate({ endTimeMillis: 1_000 });
      expect(dry.status).toBe(200);
      expect(await rowsOf("timeseries.truncate", since)).toEqual([]);

      const started = await truncate({ endTimeMillis: 2_000, dryRun: false, batchSize: 500 });
      const taskId = started.body.value as string;
      const again = await truncate({ endTimeMillis: 2_000, dryRun: false, batchSize: 500 });
      expect(again.body.value).toBe(taskId); // the same task, which another caller's request joins too
      const other = await truncate({ endTimeMillis: 2_000, dryRun: false, batchSize: 500 }, systemClientHeaders(ROOT));
      expect(other.body.value).toBe(taskId);
      const rows = await rowsOf("timeseries.truncate", since);
      const who = rows.map((r) => `${r.actorUrn} ${JSON.parse(r.details).joined ? "joined" : "created"}`);
      expect(who.sort()).toEqual([`${OPERATOR} created`, `${OPERATOR} joined`, `${ROOT} joined`].sort());
      const created = rows.filter((r) => !JSON.parse(r.details).joined);
      expect(created[0]).toMatchObject({ actorUrn: OPERATOR, targetUrn: `urn:li:task:${taskId}` });
      expect(JSON.parse(created[0]!.details)).toMatchObject({
        taskId,
        entityType: "dataset",
        aspect: "datasetProfile",
        endTimeMillis: 2_000,
        batchSize: 500,
        via: "system",
      });
      expect(created[0]!.createdAt).toBeGreaterThanOrEqual(since - 1000);
    });

    it("records a cancellation once, and nothing for cancelling a finished task", async () => {
      const since = Date.now();
      const taskId = (await truncate({ endTimeMillis: 3_000, dryRun: false })).body.value as string;
      const cancelled = await h.post("/gms/operations?action=cancelTask", { taskId }, asOperator);
      expect(cancelled.body.value).toMatchObject({ state: "cancelled" });
      const again = await h.post("/gms/operations?action=cancelTask", { taskId }, asOperator);
      expect(again.status).toBe(409);
      const target = `urn:li:task:${taskId}`;
      const rows = await rowsOf("task.cancel", since, target);
      expect(rows).toHaveLength(1);
      expect(rows[0]).toMatchObject({ actorUrn: OPERATOR, targetUrn: target });
      expect(JSON.parse(rows[0]!.details)).toMatchObject({ type: "TRUNCATE_TIMESERIES", state: "waiting" });
      // The task's story by its target: created, then cancelled, newest first.
      expect((await audit({ targetUrn: target })).events.map((e) => e.action)).toEqual([
        "task.cancel",
        "timeseries.truncate",
      ]);
    });

    it("records asking a running task to stop once, however often it is asked", async () => {
      const since = Date.now();
      const taskId = (await truncate({ endTimeMillis: 3_500, dryRun: false })).body.value as string;
      // held by a worker, as a running truncation is
      const claimed = await new TaskLifecycle(h.database, createLogger("audit-test", "silent")).claim(taskId);
      expect(claimed.outcome).toBe("claimed");
      for (let i = 0; i < 5; i++) {
        const asked = await h.post("/gms/operations?action=cancelTask", { taskId }, asOperator);
        expect(asked.body.value).toMatchObject({ state: "active", cancelRequested: true });
      }
      expect(await rowsOf("task.cancel", since, `urn:li:task:${taskId}`)).toHaveLength(1);
    });

    it("records nothing for a refused truncation", async () => {
      const since = Date.now();
      const refused = await h.post(
        TRUNCATE,
        { entityType: "dataset", aspect: "datasetProfile", endTimeMillis: 4_000, dryRun: false },
        systemClientHeaders("urn:li:corpuser:nobody"),
      );
      expect(refused.status).toBe(403);
      expect(await audit({ since, actorUrn: "urn:li:corpuser:nobody" })).toMatchObject({ total: 0 });
    });
  });

  describe("tokens, policies and tests", () => {
    it("records each write once: token create and revoke, policy create/update/delete, test create/update/delete", async () => {
      const since = Date.now();
      const token = await createToken(h, OPERATOR, asOperator);
      await h.graphql(`mutation { revokeAccessToken(tokenId: "${token.id}") }`, {}, asOperator);

      const policy = { name: "audited", state: "INACTIVE", privileges: ["VIEW_TESTS"], actors: { users: [OPERATOR] } };
      const created = await h.graphql(
        `mutation($i: PolicyUpdateInput!) { createPolicy(input: $i) }`,
        { i: policy },
        systemClientHeaders(ROOT),
      );
      const policyUrn = created.body.data!.createPolicy as string;
      await h.graphql(
        `mutation($u: String!, $i: PolicyUpdateInput!) { updatePolicy(urn: $u, input: $i) }`,
        { u: policyUrn, i: { ...policy, name: "audited again" } },
        systemClientHeaders(ROOT),
      );
      await h.graphql(`mutation { deletePolicy(urn: "${policyUrn}") }`, {}, systemClientHeaders(ROOT));

      const definition = {
        json: JSON.stringify({ on: { types: ["chart"] }, rules: { property: "x", operator: "exists" } }),
      };
      const testInput = { name: "audited test", category: "Quality", definition };
      await h.graphql(
        `mutation($i: CreateTestInput!) { createTest(input: $i) }`,
        { i: { id: "audited", ...testInput } },
        asOperator,
      );
      await h.graphql(
        `mutation($i: UpdateTestInput!) { updateTest(urn: "urn:li:test:audited", input: $i) }`,
        { i: { ...testInput, name: "renamed" } },
        asOperator,
      );
      await h.graphql(`mutation { deleteTest(urn: "urn:li:test:audited") }`, {}, asOperator);

      const tokenUrn = `urn:li:dataHubAccessToken:${token.id}`;
      const expected: Array<[string, string, string]> = [
        ["accessToken.create", OPERATOR, tokenUrn],
        ["accessToken.revoke", OPERATOR, tokenUrn],
        ["policy.create", ROOT, policyUrn],
        ["policy.update", ROOT, policyUrn],
        ["policy.delete", ROOT, policyUrn],
        ["test.create", OPERATOR, "urn:li:test:audited"],
        ["test.update", OPERATOR, "urn:li:test:audited"],
        ["test.delete", OPERATOR, "urn:li:test:audited"],
      ];
      for (const [action, actor, target] of expected) {
        const rows = await rowsOf(action, since);
        expect([action, rows.map((r) => [r.actorUrn, r.targetUrn])]).toEqual([action, [[actor, target]]]);
      }
    });
  });

  describe("the queue dashboard's write actions", () => {
    const queue = QUEUE_NAMES.truncate;

    it("records cleaning a queue's failed or completed jobs, naming the queue and status; a retry is refused unrecorded", async () => {
      const since = Date.now();
      expect((await dashboard("PUT", `${queue}/retry/failed`)).status).toBe(403);
      expect((await dashboard("PUT", `${queue}/clean/completed`)).status).toBe(200);
      expect((await dashboard("PUT", `${queue}/clean/failed`)).status).toBe(200);

      const details = async (action: string) =>
        (await rowsOf(action, since)).map((r) => JSON.parse(r.details) as Record<string, string>);
      expect(await details("queue.retryAll")).toEqual([]);
      expect(await details("queue.clean")).toEqual([
        { queue, status: "failed", via: "token" },
        { queue, status: "completed", via: "token" },
      ]);
    });

    it("refuses pausing (a write it does not take), a write route it does not know, a refused caller: no row", async () => {
      const since = Date.now();
      expect((await dashboard("PUT", `${queue}/pause`)).status).toBe(404);
      const unknown = await dashboard("POST", `${queue}/reticulate`);
      expect(unknown.status).toBe(404);
      const outsider = "urn:li:corpuser:dashboard-outsider";
      await grant(h, outsider, ["GENERATE_PERSONAL_ACCESS_TOKENS"]);
      const refused = await dashboard("PUT", `${queue}/retry/failed`, (await createToken(h, outsider)).token);
      expect(refused.status).toBe(403);
      expect((await audit({ since })).events.filter((e) => e.action.startsWith("queue."))).toEqual([]);
    });

    it("checks the queue and the job before auditing: 8 KB names of what does not exist leave no row", async () => {
      const since = Date.now();
      const long = "q".repeat(8192);
      const paths = [
        `${long}/retry/failed`,
        `${long}/clean/completed`,
        `${long}/job-1/clean`,
        `${queue}/${long}/clean`,
      ];
      // as the flood was sent: several connections at once
      const answers = await Promise.all(
        Array.from({ length: 40 }, (_, i) => dashboard("PUT", paths[i % paths.length]!)),
      );
      expect(new Set(answers.map((a) => a.status))).toEqual(new Set([404]));
      const body = (await answers[0]!.json()) as { message: string };
      expect(body.message.length).toBeLessThan(200); // the name is not echoed whole either
      expect((await audit({ since })).events.filter((e) => e.action.startsWith("queue."))).toEqual([]);
    });

    it("bounds the rows one actor's dashboard writes leave: past the burst, 429 with Retry-After and no row", async () => {
      const flooder = "urn:li:corpuser:dashboard-flooder";
      await grant(h, flooder, ["MANAGE_SYSTEM_OPERATIONS"]);
      const token = (await createToken(h, flooder)).token;
      const since = Date.now();
      const answers: Response[] = [];
      for (let i = 0; i < 40; i++) answers.push(await dashboard("PUT", `${queue}/clean/completed`, token));
      const statuses = answers.map((a) => a.status);
      expect(statuses.filter((s) => s === 200).length).toBeLessThanOrEqual(31); // 30 at once, one more refilled
      expect(statuses.slice(-5)).toEqual([429, 429, 429, 429, 429]);
      const limited = answers.at(-1)!;
      expect(Number(limited.headers.get("retry-after"))).toBeGreaterThan(0);
      expect(((await limited.json()) as { message: string }).message).toMatch(/queue dashboard writes/);
      const rows = (await audit({ since, actorUrn: flooder, count: 100 })).events;
      expect(rows.length).toBe(statuses.filter((s) => s === 200).length);
      // another actor is not held back by this one's flood
      expect((await dashboard("PUT", `${queue}/clean/completed`)).status).toBe(200);
    });
  });

  describe("caller text in a row", () => {
    it("is cut: an 8 KB target and detail, NUL and a lone surrogate stored bounded and storable", async () => {
      const since = Date.now();
      const eightKb = "x".repeat(8192);
      await recordAudit(h.prisma, { urn: OPERATOR, via: "token" }, "test.cut", `urn:li:thing:${eightKb}`, {
        note: `${eightKb}\u0000\ud800`,
        nested: { list: Array.from({ length: 100 }, () => eightKb) },
      });
      const [row] = await rowsOf("test.cut", since);
      expect(row!.targetUrn).toBe(`urn:li:thing:${"x".repeat(2048 - 13)}… (cut from ${8192 + 13} characters)`);
      const details = JSON.parse(row!.details) as { note: string; nested: { list: string[] } };
      expect(details.note).toBe(`${"x".repeat(2048)}… (cut from 8194 characters)`);
      expect(row!.details.length).toBeLessThan(40_000);
      expect(details.nested.list.at(-1)).toMatch(/^… \(\d+ more\)$/);
    });

    it("is cut in a privileged write's own row: a policy naming a hundred long user urns", async () => {
      const since = Date.now();
      const users = Array.from({ length: 100 }, (_, i) => `urn:li:corpuser:${String(i).padStart(400, "u")}`);
      const created = await h.graphql(
        `mutation($i: PolicyUpdateInput!) { createPolicy(input: $i) }`,
        { i: { name: "long list", state: "INACTIVE", privileges: ["VIEW_TESTS"], actors: { users } } },
        systemClientHeaders(ROOT),
      );
      expect(created.body.errors).toBeUndefined();
      const [row] = await rowsOf("policy.create", since);
      expect(row!.details.length).toBeLessThan(40_000);
      const listed = (JSON.parse(row!.details) as { users: string[] }).users;
      expect(listed.slice(0, 10)).toEqual(users.slice(0, 10)); // urns themselves are never cut
      expect(listed.at(-1)).toMatch(/^… \(\d+ more\)$/);
      // the policy itself keeps them all
      const stored = await h.prisma.policy.findUniqueOrThrow({
        where: { urn: created.body.data!.createPolicy as string },
      });
      expect(stored.users).toHaveLength(100);
    });
  });

  describe("listAuditEvents", () => {
    it("filters by actor, action, target and time, newest first, in pages", async () => {
      const all = await audit({ count: 1000 });
      expect(all.total).toBeGreaterThan(10);
      const times = all.events.map((e) => e.createdAt);
      expect(times).toEqual([...times].sort((a, b) => b - a));

      const byOperator = await audit({ actorUrn: OPERATOR, count: 1000 });
      expect(byOperator.events.every((e) => e.actorUrn === OPERATOR)).toBe(true);
      expect(byOperator.total).toBe(all.events.filter((e) => e.actorUrn === OPERATOR).length);

      // A window of time: since inclusive, until exclusive.
      const middle = all.events[Math.floor(all.events.length / 2)]!.createdAt;
      const older = await audit({ until: middle, count: 1000 });
      const newer = await audit({ since: middle, count: 1000 });
      expect(older.total + newer.total).toBe(all.total);
      expect(older.events.every((e) => e.createdAt < middle)).toBe(true);
      expect(newer.events.every((e) => e.createdAt >= middle)).toBe(true);

      const pages = [await audit({ count: 3 }), await audit({ start: 3, count: 3 })];
      expect(pages.flatMap((p) => p.events.map((e) => e.id))).toEqual(all.events.slice(0, 6).map((e) => e.id));
    });

    it("refuses a time outside what a Date holds and a malformed urn with the field named", async () => {
      for (const [input, message] of [
        [{ since: -1 }, "input.since must be epoch milliseconds from 0 to 8640000000000000"],
        // a safe integer, but past the last time a Date holds
        [{ until: 8.64e15 + 1 }, "input.until must be epoch milliseconds from 0 to 8640000000000000"],
        [{ targetUrn: "task-1" }, "Invalid urn in 'input.targetUrn'"],
      ] as const) {
        const res = await h.graphql(LIST, { input }, systemClientHeaders(ROOT));
        expect(res.body.errors?.[0]?.message).toContain(message);
        expect(res.body.errors?.[0]?.extensions?.code).toBe("BAD_USER_INPUT");
      }
    });

    it("is readable only with MANAGE_POLICIES", async () => {
      const res = await h.graphql(LIST, { input: {} }, asOperator);
      expect(res.body.errors?.[0]).toMatchObject({ extensions: { code: "FORBIDDEN" } });
    });
  });
});
