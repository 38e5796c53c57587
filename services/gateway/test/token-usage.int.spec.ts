/**
 * What each token is used for, on two gateways sharing one database and Redis: the last few clients (address, user
 * agent) and requests by operation, written in batches and read back on the token's metadata; listAccessTokens'
 * unusedForDays filter; ACCESS_TOKEN_IDLE_REVOKE_DAYS's chore revoking idle tokens, refused on the other gateway too.
 */
import { eventually } from "@mdp/core/testing";
import { Producer } from "@mdp/queues";
import { bearer, createToken, ROOT, startGateway, systemClientHeaders, type Harness } from "./support/gateway-harness";

interface Usage {
  total: number;
  clients: Array<{ ip: string; userAgent: string; lastSeenAt: number }>;
  operations: Array<{ operation: string; count: number }>;
}

const LIST = `query($f: [FacetFilterInput!]) {
  listAccessTokens(input: {count: 100, filters: $f}) {
    tokens { id usage { total clients { ip userAgent lastSeenAt } operations { operation count } } }
  }
}`;

describe("access token usage", () => {
  let a: Harness;
  let b: Harness;

  beforeAll(async () => {
    a = await startGateway({ ACCESS_TOKEN_IDLE_REVOKE_DAYS: "30" });
    b = await startGateway({
      ACCESS_TOKEN_IDLE_REVOKE_DAYS: "30",
      DATABASE_URL: a.config.DATABASE_URL,
      QUEUE_PREFIX: a.config.QUEUE_PREFIX,
    });
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
  });

  async function list(filters: unknown[]): Promise<Array<{ id: string; usage: Usage }>> {
    const res = await a.graphql(LIST, { f: filters }, systemClientHeaders(ROOT));
    if (res.body.errors) throw new Error(JSON.stringify(res.body.errors));
    return (res.body.data!.listAccessTokens as { tokens: Array<{ id: string; usage: Usage }> }).tokens;
  }
  const usageOf = async (id: string) => (await list([{ field: "id", value: id }]))[0]!.usage;
  const call = (h: Harness, token: string, userAgent: string, query = `{ me { urn } }`) =>
    h.graphql(query, {}, { ...bearer(token), "user-agent": userAgent });

  it("records the last clients and requests by operation from both gateways, written in batches", async () => {
    const { token, id } = await createToken(a, "urn:li:corpuser:usage-ops");
    expect(await usageOf(id)).toEqual({ total: 0, clients: [], operations: [] });
    for (let i = 0; i < 3; i++) expect((await call(a, token, "exporter/1.0")).status).toBe(200);
    expect((await call(b, token, "exporter/2.0", `{ me { urn } listAccessTokens(input: {}) { total } }`)).status).toBe(
      200,
    );
    const http = await fetch(`${b.baseUrl}/gms/config`, { headers: { ...bearer(token), "user-agent": "sdk/0.1" } });
    expect(http.status).toBe(200);

    const usage = (await eventually(
      "the uses flushed by both gateways",
      async () => {
        // Clients and counts are read by two statements: a flush committed between them shows its counts without its
        // client until the next read.
        const u = await usageOf(id);
        return u.total === 6 && u.clients.length === 3 ? u : undefined;
      },
      { timeoutMs: 15_000 },
    ))!;
    expect(usage.operations).toEqual([
      { operation: "Query.me", count: 4 },
      { operation: "GET /gms/config", count: 1 },
      { operation: "Query.listAccessTokens", count: 1 },
    ]);
    expect(usage.clients.map((c) => c.userAgent).sort()).toEqual(["exporter/1.0", "exporter/2.0", "sdk/0.1"]);
    expect(usage.clients.every((c) => /127\.0\.0\.1/.test(c.ip) && c.lastSeenAt > Date.now() - 60_000)).toBe(true);
    // Reading the usage is not a use: the listing above ran with the system client.
  });

  it("records a request no route took under the page it belongs to, or as answered without a route: never 'unmatched'", async () => {
    const { token, id } = await createToken(a, "urn:li:corpuser:usage-pages");
    // the API reference's files, served by the page's own static handler (no route pattern), and a path nothing serves
    expect((await fetch(`${a.baseUrl}/api-docs/`, { headers: bearer(token) })).status).toBe(200);
    expect((await fetch(`${a.baseUrl}/no/such/route`, { headers: bearer(token) })).status).toBe(404);
    await a.services.tokenUsage.recorder.flush();
    const operations = (await usageOf(id)).operations.map((o) => o.operation).sort();
    expect(operations).toEqual(["GET (no route, 404)", "GET /api-docs"]);
  });

  it("writes a token's lastUsedAt and its usage in one flush of one recorder", async () => {
    const { token, id } = await createToken(a, "urn:li:corpuser:usage-one-flush");
    const before = Date.now();
    expect((await call(a, token, "one-flush/1.0")).status).toBe(200);
    await a.services.tokenUsage.recorder.flush();
    const row = await a.prisma.accessToken.findUniqueOrThrow({ where: { id } });
    expect(row.lastUsedAt?.getTime()).toBeGreaterThanOrEqual(before - 1000);
    expect((await usageOf(id)).operations).toEqual([{ operation: "Query.me", count: 1 }]);
  });

  it("prune-token-usage drops the counts past their 30 days, a batch at a time, and keeps the rest", async () => {
    const { token, id } = await createToken(a, "urn:li:corpuser:usage-prune");
    expect((await call(a, token, "prune/1.0")).status).toBe(200);
    await a.services.tokenUsage.recorder.flush();
    const old = (daysAgo: number) => new Date(Date.now() - daysAgo * 86_400_000);
    await a.prisma.accessTokenOperationCount.createMany({
      data: [31, 32, 40].map((daysAgo) => ({ tokenId: id, day: old(daysAgo), operation: "Query.me", count: 1 })),
    });
    expect(await a.services.tokenUsage.prune()).toEqual({ deleted: 3 });
    expect((await usageOf(id)).operations).toEqual([{ operation: "Query.me", count: 1 }]);
  });

  it("keeps only the 5 most recent clients of a token", async () => {
    const { token, id } = await createToken(a, "urn:li:corpuser:usage-clients");
    for (let i = 1; i <= 8; i++) expect((await call(a, token, `agent-${i}`)).status).toBe(200);
    await a.services.tokenUsage.recorder.flush(); // what the loop does every few seconds
    const usage = await usageOf(id);
    expect(usage.clients.map((c) => c.userAgent)).toEqual(["agent-8", "agent-7", "agent-6", "agent-5", "agent-4"]);
    expect(await a.prisma.accessTokenClient.count({ where: { tokenId: id } })).toBe(5);
  });

  it("lists tokens unused for N days, and refuses a bad N naming the filter and the range", async () => {
    const idle = await createToken(a, "urn:li:corpuser:usage-idle");
    const fresh = await createToken(a, "urn:li:corpuser:usage-idle");
    await a.prisma.accessToken.update({
      where: { id: idle.id },
      data: { createdAt: new Date(Date.now() - 10 * 86_400_000), lastUsedAt: new Date(Date.now() - 8 * 86_400_000) },
    });
    const ids = (await list([{ field: "unusedForDays", value: "7" }])).map((t) => t.id);
    expect(ids).toContain(idle.id);
    expect(ids).not.toContain(fresh.id);
    expect((await list([{ field: "unusedForDays", value: "9" }])).map((t) => t.id)).not.toContain(idle.id);

    const bad = await a.graphql(LIST, { f: [{ field: "unusedForDays", value: "0" }] }, systemClientHeaders(ROOT));
    expect(bad.body.errors?.[0]?.extensions?.code).toBe("BAD_USER_INPUT");
    expect(bad.body.errors?.[0]?.message).toContain("unusedForDays must be one whole number of days from 1 to 36500");
  });

  it("ACCESS_TOKEN_IDLE_REVOKE_DAYS: a chore on one gateway revokes idle tokens, refused on the other too, audited", async () => {
    const idle = await createToken(a, "urn:li:corpuser:usage-chore");
    const busy = await createToken(a, "urn:li:corpuser:usage-chore-busy");
    expect((await call(b, idle.token, "cron")).status).toBe(200); // B has it cached
    await b.services.tokenUsage.recorder.flush();
    await eventually("its use flushed", async () => {
      const row = await a.prisma.accessToken.findUnique({ where: { id: idle.id } });
      return row?.lastUsedAt != null;
    });
    await b.connections.db.prisma.accessToken.update({
      where: { id: idle.id },
      data: { createdAt: new Date(Date.now() - 40 * 86_400_000), lastUsedAt: new Date(Date.now() - 31 * 86_400_000) },
    });

    // A firing of the chore, as its job scheduler adds it hourly.
    const chores = new Producer("gatewayChores", a.connections.redis, a.config.QUEUE_PREFIX);
    try {
      await chores.queue.add("revoke-idle-tokens", {});
      await eventually("the idle token refused on B", async () => (await call(b, idle.token, "cron")).status === 401, {
        timeoutMs: 10_000,
      });
    } finally {
      await chores.close();
    }
    expect((await call(b, busy.token, "cron")).status).toBe(200);
    const rows = await a.prisma.auditEvent.findMany({
      where: { action: "accessToken.revoke", targetUrn: `urn:li:dataHubAccessToken:${idle.id}` },
    });
    expect(rows).toHaveLength(1);
    expect(rows[0]!.details).toMatchObject({ reason: "idle", idleDays: 30, via: "idle-revoke" });
  });
});
