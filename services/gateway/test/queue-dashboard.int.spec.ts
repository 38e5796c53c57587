/** Bull Board at /admin/queues: a browser login (Basic, an access token as password), MANAGE_SYSTEM_OPERATIONS only. */
import { readFileSync } from "node:fs";
import path from "node:path";
import { Queue, Worker, type Job } from "bullmq";
import { QUEUE_NAMES, closeRedis, createRedis, whenReady, type RedisConnection } from "@mdp/queues";
import {
  ROOT,
  createToken,
  grant,
  startGateway,
  startTruncationWorker,
  systemClientHeaders,
  type Harness,
} from "./support/gateway-harness";

/** The dashboard tab docs/queue-dashboard.md names for a task state, as Bull Board's API spells it (`completed`). */
function documentedTab(state: string): string {
  const doc = readFileSync(path.resolve(__dirname, "../../../docs/queue-dashboard.md"), "utf8");
  const row = doc.split("\n").find((line) => line.startsWith(`| \`${state}\``));
  if (!row) throw new Error(`docs/queue-dashboard.md has no row for ${state}`);
  return row.split("|")[2]!.trim().toLowerCase();
}

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

  describe("writes", () => {
    let redis: RedisConnection;
    let workerRedis: RedisConnection;
    let evaluate: Queue;
    let truncate: Queue;
    let schedules: Queue;
    let fetcher: Worker;
    const write = (method: string, path: string, body: unknown = {}) =>
      fetch(`${h.baseUrl}/admin/queues/api/queues/${path}`, {
        method,
        headers: { ...basic(rootToken), "content-type": "application/json" },
        body: JSON.stringify(body),
      });
    const auditRows = () => h.prisma.auditEvent.findMany({ where: { action: { startsWith: "queue." } } });
    /** A job of the evaluate queue that failed: taken as a worker would take it, then failed. */
    const failedJob = async (): Promise<string> => {
      const added = await evaluate.add("forged", { kind: "evaluate" }, { attempts: 1 });
      for (;;) {
        const job = (await fetcher.getNextJob("test-token", { block: false })) as Job | undefined;
        if (!job) throw new Error("the job was not fetched");
        await job.moveToFailed(new Error("failed on purpose"), "test-token", false);
        if (job.id === added.id) return added.id!;
      }
    };

    beforeAll(async () => {
      redis = createRedis(h.config.REDIS_URL, "producer");
      workerRedis = createRedis(h.config.REDIS_URL, "worker");
      await Promise.all([whenReady(redis), whenReady(workerRedis)]);
      const options = { connection: redis, prefix: h.config.QUEUE_PREFIX };
      evaluate = new Queue(QUEUE_NAMES.evaluate, options);
      truncate = new Queue(QUEUE_NAMES.truncate, options);
      schedules = new Queue(QUEUE_NAMES.testSchedule, options);
      fetcher = new Worker(QUEUE_NAMES.evaluate, null, {
        connection: workerRedis,
        prefix: h.config.QUEUE_PREFIX,
        autorun: false,
      });
    });
    afterAll(async () => {
      await Promise.allSettled([fetcher.close(), evaluate.close(), truncate.close(), schedules.close()]);
      await Promise.allSettled([closeRedis(redis), closeRedis(workerRedis)]);
    });

    it("refuses every write but retrying and removing, a scheduler's delayed job's promotion first, and audits none", async () => {
      // A job scheduler's next firing waits as a delayed job: promoting it (or changing its delay) would fire the
      // schedule now, as its owner.
      await schedules.upsertJobScheduler(
        "test-forged",
        { pattern: "0 0 1 1 *" },
        { name: "run", data: { testUrn: "urn:li:test:forged" } },
      );
      const [firing] = await schedules.getDelayed();
      expect(firing).toBeDefined();
      const firingId = encodeURIComponent(firing!.id!);
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
      const rowsBefore = (await auditRows()).length;
      const forged = { actorUrn: "urn:li:corpuser:someone-else", push: true };
      for (const [method, path, body] of [
        ["PUT", `${QUEUE_NAMES.testSchedule}/${firingId}/promote`, {}],
        ["PATCH", `${QUEUE_NAMES.testSchedule}/${firingId}/delay`, { delay: 0 }],
        ["PUT", `${QUEUE_NAMES.testSchedule}/promote`, {}],
        ["PATCH", `${QUEUE_NAMES.testSchedule}/job-schedulers/test-forged`, { pattern: "* * * * *" }],
        ["PUT", `${QUEUE_NAMES.testSchedule}/job-schedulers/test-forged/run`, {}],
        ["PUT", `${QUEUE_NAMES.testSchedule}/job-schedulers/test-forged/remove`, {}],
        ["POST", `${QUEUE_NAMES.evaluate}/add`, { name: "evaluate", data: forged }],
        ["PATCH", `${QUEUE_NAMES.truncate}/${taskId}/update-data`, { data: forged }],
        ["PATCH", `${QUEUE_NAMES.truncate}/${taskId}/priority`, { priority: 1 }],
        ["PUT", `${QUEUE_NAMES.truncate}/${taskId}/promote`, {}],
        ["PUT", `${QUEUE_NAMES.truncate}/pause`, {}],
        ["PUT", `${QUEUE_NAMES.truncate}/empty`, {}],
        ["PUT", `${QUEUE_NAMES.truncate}/obliterate`, {}],
        ["PUT", "pause", {}],
        // a route no Bull Board has (yet), and the allowed ones by another method
        ["PUT", `${QUEUE_NAMES.truncate}/${taskId}/reticulate`, {}],
        ["POST", `${QUEUE_NAMES.truncate}/${taskId}/retry`, {}],
        ["DELETE", `${QUEUE_NAMES.truncate}/${taskId}/clean`, {}],
        ["OPTIONS", `${QUEUE_NAMES.truncate}/${taskId}/clean`, {}],
      ] as const) {
        const res = await write(method, path, body);
        expect([method, path, res.status]).toEqual([method, path, 404]);
      }
      // retrying is a write the dashboard knows, but refuses: never of a scheduler's firing
      expect((await write("PUT", `${QUEUE_NAMES.testSchedule}/${firingId}/retry`)).status).toBe(403);
      expect(await (await schedules.getJob(firing!.id!))!.getState()).toBe("delayed"); // not fired
      expect(await schedules.getJobSchedulersCount()).toBe(1);
      expect(await evaluate.getJobCounts()).toEqual(countsBefore); // nothing queued
      expect((await truncate.getJob(taskId))!.data).toEqual(before); // the job's data untouched
      expect(await truncate.isPaused()).toBe(false);
      expect(await auditRows()).toHaveLength(rowsBefore);
    });

    it("refuses a retry or removal the job's state does not allow, before anything is audited", async () => {
      const taskId = (
        await h.post("/gms/operations?action=truncateTimeseriesAspect", {
          entityType: "dataset",
          aspect: "datasetProfile",
          endTimeMillis: 3,
          dryRun: false,
        })
      ).body.value as string;
      const rowsBefore = (await auditRows()).length;
      for (const [path, status] of [
        [`${QUEUE_NAMES.truncate}/${taskId}/clean`, 409], // waiting: its task would be queued again anyway
        [`${QUEUE_NAMES.truncate}/no-such-job/clean`, 404],
        [`${QUEUE_NAMES.truncate}/clean/wait`, 400],
        [`${QUEUE_NAMES.truncate}/clean/active`, 400],
        // no queue's jobs are retried, whatever the job's state or existence
        [`${QUEUE_NAMES.truncate}/${taskId}/retry`, 403],
        [`${QUEUE_NAMES.truncate}/no-such-job/retry`, 403],
        [`${QUEUE_NAMES.truncate}/retry/completed`, 403],
        [`${QUEUE_NAMES.testSchedule}/retry/failed`, 403], // a scheduler's firings are never retried
      ] as const) {
        const res = await write("PUT", path);
        expect([path, res.status]).toEqual([path, status]);
      }
      expect(await (await truncate.getJob(taskId))!.getState()).toBe("waiting");
      expect(await auditRows()).toHaveLength(rowsBefore);
    });

    it("refuses retrying a failed job on every queue (403 naming why, no row, the job stays failed), and removes one, audited once", async () => {
      const failed = await failedJob();
      const removed = await failedJob();
      const since = new Date(Date.now() - 1);
      const refusal = async (path: string) => {
        const res = await write("PUT", path);
        return { path, status: res.status, message: ((await res.json()) as { message: string }).message };
      };
      // evaluate-tests: a retry would run another user's evaluation or push again as that user
      expect(await refusal(`${QUEUE_NAMES.evaluate}/${failed}/retry`)).toEqual({
        path: `${QUEUE_NAMES.evaluate}/${failed}/retry`,
        status: 403,
        message: expect.stringMatching(
          /^The queue dashboard does not retry jobs of evaluate-tests: each runs a user's evaluation or test run, .*as that user, who may no longer hold what it needs/,
        ),
      });
      expect(await evaluate.getJobState(failed)).toBe("failed");
      expect((await refusal(`${QUEUE_NAMES.evaluate}/retry/failed`)).status).toBe(403);
      expect(await evaluate.getJobState(failed)).toBe("failed");
      // truncate-timeseries: its worker does not check the creator again at claim, so a new truncation is the retry
      for (const path of [`${QUEUE_NAMES.truncate}/retry/failed`, `${QUEUE_NAMES.truncate}/some-task/retry`]) {
        expect(await refusal(path)).toEqual({
          path,
          status: 403,
          message: expect.stringContaining(
            "does not retry jobs of truncate-timeseries: each is a deletion its creator asked for, and retrying it " +
              "would delete again without checking that the creator still may; start a new truncation",
          ),
        });
      }
      for (const queue of [QUEUE_NAMES.retention, QUEUE_NAMES.testSchedule]) {
        expect(await refusal(`${queue}/retry/failed`)).toMatchObject({
          status: 403,
          message: expect.stringContaining("retrying it would fire the schedule now"),
        });
      }
      expect((await write("PUT", `${QUEUE_NAMES.evaluate}/${removed}/clean`)).status).toBe(204);
      expect(await evaluate.getJob(removed)).toBeUndefined();
      const rows = await h.prisma.auditEvent.findMany({
        where: { action: { startsWith: "queue." }, createdAt: { gte: since } },
        orderBy: { id: "asc" },
      });
      expect(rows.map((r) => [r.actorUrn, r.action, r.details])).toEqual([
        [ROOT, "queue.removeJob", { queue: QUEUE_NAMES.evaluate, job: removed, via: "token" }],
      ]);
    });

    it("offers no retry on the page for any queue", async () => {
      const api = await fetch(
        `${h.baseUrl}/admin/queues/api/queues?activeQueue=${QUEUE_NAMES.evaluate}&status=failed`,
        {
          headers: basic(rootToken),
        },
      );
      const { queues } = (await api.json()) as { queues: Array<{ name: string; allowRetries: boolean }> };
      expect(queues.map((q) => [q.name, q.allowRetries]).sort()).toEqual(
        Object.values(QUEUE_NAMES)
          .map((name) => [name, false])
          .sort(),
      );
    });
  });

  it("shows a cancelled task's job in the tab docs/queue-dashboard.md names, its reason saying it was cancelled", async () => {
    const tab = documentedTab("cancelled");
    expect(tab).toBe("completed");
    const truncation = async (endTimeMillis: number) =>
      (
        await h.post("/gms/operations?action=truncateTimeseriesAspect", {
          entityType: "dataset",
          aspect: "datasetProfile",
          endTimeMillis,
          dryRun: false,
        })
      ).body.value as string;
    const shown = async (taskId: string, status: string) => {
      const api = await fetch(
        `${h.baseUrl}/admin/queues/api/queues?activeQueue=${QUEUE_NAMES.truncate}&status=${status}`,
        { headers: basic(rootToken) },
      );
      const { queues } = (await api.json()) as {
        queues: Array<{ name: string; jobs: Array<{ id: string; returnValue: unknown; failedReason?: string }> }>;
      };
      return queues.find((q) => q.name === QUEUE_NAMES.truncate)!.jobs.find((j) => j.id === taskId);
    };
    // No worker yet. One task's job is delayed, as a handed-back attempt's is (every job fetched on the way with it,
    // left delayed a minute); the other's waits.
    const delayedId = await truncation(5); // cutoffs of their own: an identical request would join another's task
    const connection = createRedis(h.config.REDIS_URL, "worker");
    const fetcher = new Worker(QUEUE_NAMES.truncate, null, {
      connection,
      prefix: h.config.QUEUE_PREFIX,
      autorun: false,
    });
    try {
      for (;;) {
        const job = (await fetcher.getNextJob("test-token", { block: false })) as Job | undefined;
        if (!job) throw new Error("the job was not fetched");
        await job.moveToDelayed(Date.now() + 60_000, "test-token");
        if (job.id === delayedId) break;
      }
    } finally {
      await fetcher.close();
      await closeRedis(connection);
    }
    const waitingId = await truncation(4);
    expect(await shown(delayedId, "delayed")).toBeDefined();
    expect(await shown(waitingId, "waiting")).toBeDefined();
    for (const taskId of [delayedId, waitingId]) {
      const cancelled = await h.post("/gms/operations?action=cancelTask", { taskId });
      expect(cancelled.body.value).toMatchObject({ state: "cancelled", failedReason: "Cancelled before it started" });
    }
    expect(await shown(waitingId, "waiting")).toBeDefined(); // kept, not removed, until a worker ends it

    const worker = await startTruncationWorker(h);
    try {
      for (const taskId of [delayedId, waitingId]) {
        const deadline = Date.now() + 15_000;
        while (!(await shown(taskId, tab)) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
        expect((await shown(taskId, tab))?.returnValue).toEqual({
          cancelled: true,
          reason: "Cancelled before it started",
        });
        for (const other of ["failed", "waiting", "delayed"]) expect(await shown(taskId, other)).toBeUndefined();
      }
    } finally {
      await worker.close();
    }
  });
});
