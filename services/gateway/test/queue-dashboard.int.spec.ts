/** Bull Board at /admin/queues: a browser login (Basic, an access token as password), MANAGE_SYSTEM_OPERATIONS only. */
import { Queue } from "bullmq";
import { QUEUE_NAMES, closeRedis, createRedis, whenReady } from "@mdp/queues";
import { ROOT, createToken, grant, startGateway, systemClientHeaders, type Harness } from "./support/gateway-harness";

const basic = (token: string) => ({ authorization: `Basic ${Buffer.from(`anyone:${token}`).toString("base64")}` });

describe("queue dashboard", () => {
  let h: Harness;
  let rootToken: string;

  beforeAll(async () => {
    h = await startGateway();
    rootToken = (await createToken(h, ROOT)).token;
  });
  afterAll(() => h.close());

  it("asks a browser for credentials", async () => {
    const res = await fetch(`${h.baseUrl}/admin/queues`);
    expect(res.status).toBe(401);
    expect(res.headers.get("www-authenticate")).toMatch(/^Basic realm=/);
  });

  it("refuses a caller without MANAGE_SYSTEM_OPERATIONS", async () => {
    const user = "urn:li:corpuser:operator-to-be";
    await grant(h, user, ["GENERATE_PERSONAL_ACCESS_TOKENS"]);
    const token = (await createToken(h, user)).token;
    const res = await fetch(`${h.baseUrl}/admin/queues`, { headers: basic(token) });
    expect(res.status).toBe(403);
  });

  it("shows every queue, with a task's job, to a holder logging in with an access token", async () => {
    const taskId = (
      await h.post("/gms/operations?action=truncateTimeseriesAspect", {
        entityType: "dataset",
        aspect: "datasetProfile",
        endTimeMillis: 1,
        dryRun: false,
      })
    ).body.value as string;
    const page = await fetch(`${h.baseUrl}/admin/queues`, { headers: basic(rootToken) });
    expect(page.status).toBe(200);
    expect(await page.text()).toContain("<html");
    const api = await fetch(`${h.baseUrl}/admin/queues/api/queues?activeQueue=${QUEUE_NAMES.truncate}&status=waiting`, {
      headers: basic(rootToken),
    });
    const { queues } = (await api.json()) as { queues: Array<{ name: string; jobs: Array<{ id: string }> }> };
    // every queue of the system: the two of tasks, and the schedules' (retention policies, scheduled tests)
    expect(queues.map((q) => q.name).sort()).toEqual(Object.values(QUEUE_NAMES).sort());
    expect(queues.find((q) => q.name === QUEUE_NAMES.truncate)?.jobs.map((j) => j.id)).toContain(taskId);
  });

  it("also accepts a bearer token", async () => {
    const res = await fetch(`${h.baseUrl}/admin/queues`, { headers: { authorization: `Bearer ${rootToken}` } });
    expect(res.status).toBe(200);
  });

  it("does not let the system client's Basic credentials through without an actor", async () => {
    const authorization = systemClientHeaders(ROOT).authorization!;
    const res = await fetch(`${h.baseUrl}/admin/queues`, { headers: { authorization } });
    expect(res.status).toBe(401);
  });

  it("tells a browser whose password is not an access token that it must be one", async () => {
    const res = await fetch(`${h.baseUrl}/admin/queues`, { headers: basic("hunter2") });
    expect(res.status).toBe(401);
    expect(res.headers.get("www-authenticate")).toMatch(/^Basic realm=/);
    expect(((await res.json()) as { message: string }).message).toBe(
      "The queue dashboard's password must be an access token (any user name); this one is not.",
    );
  });

  it("still says why a revoked token given as the password is refused", async () => {
    const { token, id } = await createToken(h, ROOT);
    await h.graphql(`mutation($id: String!) { revokeAccessToken(tokenId: $id) }`, { id }, systemClientHeaders(ROOT));
    const res = await fetch(`${h.baseUrl}/admin/queues`, { headers: basic(token) });
    expect(res.status).toBe(401);
    expect(((await res.json()) as { message: string }).message).toBe("Token has been revoked");
  });

  it("refuses to add a job, edit a job's data or run a job scheduler, since workers trust a job's data", async () => {
    const redis = createRedis(h.config.REDIS_URL, "producer");
    await whenReady(redis);
    const evaluate = new Queue(QUEUE_NAMES.evaluate, { connection: redis, prefix: h.config.QUEUE_PREFIX });
    const truncate = new Queue(QUEUE_NAMES.truncate, { connection: redis, prefix: h.config.QUEUE_PREFIX });
    try {
      const taskId = (
        await h.post("/gms/operations?action=truncateTimeseriesAspect", {
          entityType: "dataset",
          aspect: "datasetProfile",
          endTimeMillis: 2,
          dryRun: false,
        })
      ).body.value as string;
      const before = (await truncate.getJob(taskId))!.data as unknown;
      const countsBefore = await evaluate.getJobCounts();
      const write = (method: string, path: string, body: unknown) =>
        fetch(`${h.baseUrl}/admin/queues/api/queues/${path}`, {
          method,
          headers: { ...basic(rootToken), "content-type": "application/json" },
          body: JSON.stringify(body),
        });
      const forged = { actorUrn: "urn:li:corpuser:someone-else", push: true };
      for (const [method, path, body] of [
        ["POST", `${QUEUE_NAMES.evaluate}/add`, { name: "evaluate", data: forged }],
        ["PATCH", `${QUEUE_NAMES.truncate}/${taskId}/update-data`, { data: forged }],
        ["PATCH", `${QUEUE_NAMES.testSchedule}/job-schedulers/test-x`, { pattern: "* * * * *" }],
        ["PUT", `${QUEUE_NAMES.testSchedule}/job-schedulers/test-x/run`, {}],
      ] as const) {
        const res = await write(method, path, body);
        expect([method, path, res.status]).toEqual([method, path, 404]);
      }
      expect(await evaluate.getJobCounts()).toEqual(countsBefore); // nothing queued
      expect((await truncate.getJob(taskId))!.data).toEqual(before); // the job's data untouched
    } finally {
      await Promise.allSettled([evaluate.close(), truncate.close()]);
      await closeRedis(redis);
    }
  });
});
