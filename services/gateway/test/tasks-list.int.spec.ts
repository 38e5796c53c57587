/**
 * listTasks over HTTP and GraphQL against a real gateway and PostgreSQL: filters (the state as getTaskStatus shows it),
 * paging newest first, bounds and strict input, privileges, and who created a task in its status.
 */
import { randomUUID } from "node:crypto";
import { ROOT, grant, startGateway, systemClientHeaders, type Harness } from "./support/gateway-harness";

const LIST = "/gms/operations?action=listTasks";
const ALICE = "urn:li:corpuser:alice";
const BOB = "urn:li:corpuser:bob";
const T0 = Date.UTC(2026, 0, 1);
const MINUTE = 60_000;

interface Task {
  taskId: string;
  type: string;
  state: string;
  createdBy: string;
  createdAt: number;
  failedReason: string | null;
}
interface Page {
  start: number;
  count: number;
  total: number;
  tasks: Task[];
}

describe("listTasks", () => {
  let h: Harness;
  /** every fixture row, newest first */
  const rows: Array<{ id: string; type: string; state: string; createdBy: string; createdAt: number }> = [];

  const list = async (body: unknown, headers = systemClientHeaders(ROOT)) => {
    const res = await h.post(LIST, body, headers);
    return { status: res.status, page: res.body.value as Page, message: res.body.message };
  };
  const idsOf = (page: Page) => page.tasks.map((t) => t.taskId);
  const expected = (keep: (r: (typeof rows)[number]) => boolean) => rows.filter(keep).map((r) => r.id);

  /** A task row as the lifecycle would leave it (tests set states directly, as libs/tasks' README says). */
  const insert = async (type: string, state: string, createdBy: string, createdAt: number, lapsed = false) => {
    const id = randomUUID();
    const leased = state === "active";
    await h.database.pool.query(
      `INSERT INTO task (id, type, state, request, progress, created_by, created_at, attempts_made, started_at,
                         lease_owner, lease_token, lease_expires_at, finished_at)
       VALUES ($1, $2::"TaskType", $3::"TaskState", '{}', '{}', $4, to_timestamp($5 / 1000.0), $6, $7, $8, $9, $10, $11)`,
      [
        id,
        type,
        state,
        createdBy,
        createdAt,
        state === "waiting" ? 0 : 1,
        state === "waiting" ? null : new Date(createdAt),
        leased ? "worker-test" : null,
        leased ? randomUUID() : null,
        leased ? new Date(Date.now() + (lapsed ? -60_000 : 3_600_000)) : null,
        ["completed", "failed", "cancelled"].includes(state) ? new Date(createdAt + 1000) : null,
      ],
    );
    rows.push({ id, type, state: lapsed ? "waiting" : state, createdBy, createdAt });
    rows.sort((a, b) => b.createdAt - a.createdAt || (a.id < b.id ? 1 : -1));
    return id;
  };

  let lapsedId: string;

  beforeAll(async () => {
    h = await startGateway();
    const states = ["waiting", "active", "completed", "failed", "cancelled"];
    for (let i = 0; i < 25; i++) {
      const type = i % 3 === 0 ? "EVALUATE_TESTS" : "TRUNCATE_TIMESERIES";
      await insert(type, states[i % 5]!, i % 2 === 0 ? ALICE : BOB, T0 + i * MINUTE);
    }
    // Two in the same millisecond: paging must neither repeat nor skip one of them.
    await insert("TRUNCATE_TIMESERIES", "completed", ALICE, T0 + 30 * MINUTE);
    await insert("TRUNCATE_TIMESERIES", "completed", ALICE, T0 + 30 * MINUTE);
    // Active, but its worker stopped renewing the lease: status shows it waiting, and so must the filter.
    lapsedId = await insert("TRUNCATE_TIMESERIES", "active", BOB, T0 + 40 * MINUTE, true);
  });
  afterAll(() => h.close());

  it("lists newest first with the default page of 20, and the total", async () => {
    const { status, page } = await list({});
    expect(status).toBe(200);
    expect(page).toMatchObject({ start: 0, count: 20, total: rows.length });
    expect(idsOf(page)).toEqual(rows.slice(0, 20).map((r) => r.id));
    const createdAt = page.tasks.map((t) => t.createdAt);
    expect(createdAt).toEqual([...createdAt].sort((a, b) => b - a));
  });

  it("pages without overlap or gaps, including tasks created in the same millisecond", async () => {
    const seen: string[] = [];
    for (let start = 0; start < rows.length; start += 4) {
      const { page } = await list({ start, count: 4 });
      expect(page.total).toBe(rows.length);
      seen.push(...idsOf(page));
    }
    expect(seen).toEqual(rows.map((r) => r.id));
    expect((await list({ start: rows.length, count: 5 })).page).toEqual({
      start: rows.length,
      count: 0,
      total: rows.length,
      tasks: [],
    });
  });

  it("filters by type, creator and creation time (after inclusive, before exclusive)", async () => {
    const byType = (await list({ type: "EVALUATE_TESTS", count: 100 })).page;
    expect(idsOf(byType)).toEqual(expected((r) => r.type === "EVALUATE_TESTS"));
    expect(byType.total).toBe(byType.tasks.length);

    const byAlice = (await list({ createdBy: ALICE, count: 100 })).page;
    expect(idsOf(byAlice)).toEqual(expected((r) => r.createdBy === ALICE));
    expect(byAlice.tasks.every((t) => t.createdBy === ALICE)).toBe(true);

    const after = T0 + 5 * MINUTE;
    const before = T0 + 10 * MINUTE;
    const window = (await list({ createdAfter: after, createdBefore: before })).page;
    expect(idsOf(window)).toEqual(expected((r) => r.createdAt >= after && r.createdAt < before));
    expect(window.tasks).toHaveLength(5);

    const all = (
      await list({ type: "TRUNCATE_TIMESERIES", createdBy: BOB, state: "failed", createdAfter: T0, count: 100 })
    ).page;
    expect(idsOf(all)).toEqual(
      expected((r) => r.type === "TRUNCATE_TIMESERIES" && r.createdBy === BOB && r.state === "failed"),
    );
    expect(all.tasks.length).toBeGreaterThan(0);
  });

  it("filters by the state getTaskStatus shows: an active task whose lease lapsed is waiting, not active", async () => {
    for (const state of ["waiting", "active", "completed", "failed", "cancelled"]) {
      const { page } = await list({ state, count: 100 });
      expect(idsOf(page)).toEqual(expected((r) => r.state === state));
      expect(page.tasks.every((t) => t.state === state)).toBe(true);
    }
    expect(idsOf((await list({ state: "waiting", count: 100 })).page)).toContain(lapsedId);
    expect(idsOf((await list({ state: "active", count: 100 })).page)).not.toContain(lapsedId);
    const status = await h.post("/gms/operations?action=getTaskStatus", { taskId: lapsedId });
    expect(status.body.value).toMatchObject({ state: "waiting", createdBy: BOB });
  });

  it("answers the same over GraphQL, with JSON values as text", async () => {
    const res = await h.graphql(
      `query($input: ListTasksInput!) {
        listTasks(input: $input) { start count total tasks { taskId type state createdBy createdAt progress request result } }
      }`,
      { input: { state: "waiting", createdBy: BOB, count: 3 } },
      systemClientHeaders(ROOT),
    );
    expect(res.body.errors).toBeUndefined();
    const page = res.body.data!.listTasks as Page & { tasks: Array<Task & { progress: string; result: null }> };
    const want = expected((r) => r.state === "waiting" && r.createdBy === BOB);
    expect(page).toMatchObject({ start: 0, count: Math.min(3, want.length), total: want.length });
    expect(idsOf(page)).toEqual(want.slice(0, 3));
    expect(page.tasks[0]).toMatchObject({ state: "waiting", createdBy: BOB, progress: "{}", result: null });
  });

  it.each([
    [{ count: 101 }, "count: must be at most 100 (tasks one page holds)"],
    [{ count: 0 }, "count: must be a whole number from 1 to 100"],
    [{ start: -1 }, "start: must be a whole number from 0 to 10000"],
    [{ start: 10_001 }, "start: must be at most 10000 (page further back with createdBefore)"],
    [{ state: "running" }, "state: must be one of waiting, active, completed, failed, cancelled"],
    [{ type: "REINDEX" }, "type: must be TRUNCATE_TIMESERIES or EVALUATE_TESTS"],
    [{ createdAfter: "yesterday" }, "createdAfter: must be a whole number of epoch milliseconds"],
    [{ createdBy: "alice" }, "Invalid urn in 'createdBy'"],
    [{ createdBy: "urn:li:corpGroup:admins" }, "is not a corpuser urn"],
    [{ limit: 5 }, "unknown field(s) limit"],
  ])("refuses %p with a 400 naming the field and its limit", async (body, message) => {
    const { status, message: got } = await list(body);
    expect(status).toBe(400);
    expect(got).toContain(message);
  });

  it("answers any safe-integer time, even past what a Date holds: PostgreSQL compares it, no Date is made", async () => {
    const late = await list({ createdAfter: Number.MAX_SAFE_INTEGER });
    expect([late.status, late.page?.total]).toEqual([200, 0]);
  });

  it("refuses a page of more than 100 over GraphQL too", async () => {
    const res = await h.graphql(`{ listTasks(input: {count: 101}) { total } }`, {}, systemClientHeaders(ROOT));
    expect(res.body.errors?.[0]).toMatchObject({
      message: expect.stringContaining("count: must be at most 100") as string,
      extensions: { code: "BAD_USER_INPUT" },
    });
  });

  it("needs GET_TASK_STATUS, checked before the input is read", async () => {
    const refused = await list({ count: 1000 }, systemClientHeaders("urn:li:corpuser:nobody"));
    expect(refused.status).toBe(403);
    expect(refused.message).toBe("urn:li:corpuser:nobody is unauthorized to list tasks.");
    const viewer = "urn:li:corpuser:task-viewer";
    await grant(h, viewer, ["GET_TASK_STATUS"]);
    expect((await list({ count: 1 }, systemClientHeaders(viewer))).page.total).toBe(rows.length);
  });

  it("shows who created a task in its status, started through the API", async () => {
    const operator = "urn:li:corpuser:operator";
    await grant(h, operator, ["TRUNCATE_TIMESERIES_INDEX"]);
    const started = await h.post(
      "/gms/operations?action=truncateTimeseriesAspect",
      { entityType: "dataset", aspect: "datasetProfile", endTimeMillis: 1, dryRun: false },
      systemClientHeaders(operator),
    );
    const taskId = started.body.value as string;
    const viaGet = await fetch(`${h.baseUrl}/gms/operations/tasks/${taskId}`, { headers: systemClientHeaders(ROOT) });
    expect(((await viaGet.json()) as { value: Task }).value).toMatchObject({ taskId, createdBy: operator });
    const { page } = await list({ createdBy: operator });
    expect(page.tasks.map((t) => [t.taskId, t.createdBy, t.type])).toEqual([[taskId, operator, "TRUNCATE_TIMESERIES"]]);
  });
});
