/**
 * Platform events through the gateway (docs/events.md): token changes made over GraphQL write their
 * EntityChangeEvent_v1 events, and listPlatformEvents reads the stream with a cursor — pages with since/next, catches
 * up after a gap, shows each caller only what it may read now (its own token events; all with MANAGE_ACCESS_TOKENS;
 * hidden again at the next call once that privilege is gone), and reports the oldest position kept after pruning.
 * The evaluation workers' sequencer gives committed events their positions; here the test runs it as they would.
 */
import { execFile } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { eventually } from "@mdp/core/testing";
import { inTransaction, prunePlatformEvents, sequencePlatformEvents, TimeseriesStore } from "@mdp/db";
import { Producer } from "@mdp/queues";
import { hashToken } from "../src/tokens/token-hash";
import {
  bearer,
  createToken,
  grant,
  ROOT,
  startGateway,
  startTruncationWorker,
  systemClientHeaders,
  type Harness,
} from "./support/gateway-harness";

const LIST = `query($since: String, $count: Int, $eventTypes: [String!], $categories: [String!], $entityUrn: String) {
  listPlatformEvents(since: $since, count: $count, eventTypes: $eventTypes, categories: $categories, entityUrn: $entityUrn) {
    events { seq eventType category operation entityType entityUrn createdAt payload }
    next
    oldest
  }
}`;

interface Event {
  seq: string;
  eventType: string;
  category: string | null;
  operation: string | null;
  entityType: string;
  entityUrn: string;
  createdAt: number;
  payload: string;
}
interface Page {
  events: Event[];
  next: string;
  oldest: string | null;
}

const execFileAsync = promisify(execFile);
const MDP = path.resolve(__dirname, "..", "..", "..", "cli", "bin", "mdp.cjs");
const ALICE = "urn:li:corpuser:events-alice";
const BOB = "urn:li:corpuser:events-bob";
const CAROL = "urn:li:corpuser:events-carol";
const tokenUrn = (id: string) => `urn:li:dataHubAccessToken:${id}`;

describe("listPlatformEvents", () => {
  let h: Harness;
  const asRoot = systemClientHeaders(ROOT);

  beforeAll(async () => {
    h = await startGateway();
    // What reading one's own tokens needs (listAccessTokens): their events need it too.
    for (const user of [ALICE, BOB, CAROL]) await grant(h, user, ["GENERATE_PERSONAL_ACCESS_TOKENS"]);
  });
  afterAll(async () => {
    await h?.close();
  });

  /** What the evaluation workers' on-change pass does first: committed events get their positions. */
  const sequence = () => inTransaction(h.database.pool, (client) => sequencePlatformEvents(client, 10_000));

  async function list(headers: Record<string, string>, variables: Record<string, unknown> = {}): Promise<Page> {
    await sequence();
    const res = await h.graphql(LIST, variables, headers);
    if (res.body.errors) throw new Error(JSON.stringify(res.body.errors));
    return res.body.data!.listPlatformEvents as Page;
  }
  async function gql(query: string, variables: Record<string, unknown>, headers = asRoot) {
    const res = await h.graphql(query, variables, headers);
    if (res.body.errors) throw new Error(JSON.stringify(res.body.errors));
    return res.body.data!;
  }
  const head = async () => (await list(asRoot, { count: 1000 })).next;

  it("writes a token's CREATE, ROTATE and REVOKE as they commit, without the token or its hash", async () => {
    const since = await head();
    const { token, id } = await createToken(h, ALICE);
    const rotated = (await gql(
      `mutation($t: String!) { rotateAccessToken(tokenId: $t, graceSeconds: 0) { metadata { id } } }`,
      { t: id },
    )) as { rotateAccessToken: { metadata: { id: string } } };
    const successor = rotated.rotateAccessToken.metadata.id;
    await gql(`mutation($t: String!) { revokeAccessToken(tokenId: $t) }`, { t: successor });

    const { events } = await list(asRoot, { since, categories: ["ACCESS_TOKEN"] });
    expect(events.map((e) => [e.operation, e.entityUrn])).toEqual([
      ["CREATE", tokenUrn(id)],
      ["ROTATE", tokenUrn(id)],
      ["CREATE", tokenUrn(successor)],
      ["REVOKE", tokenUrn(successor)],
    ]);
    const [create, rotate, , revoke] = events.map((e) => JSON.parse(e.payload) as Record<string, unknown>);
    expect(create).toMatchObject({
      entityType: "dataHubAccessToken",
      entityUrn: tokenUrn(id),
      category: "ACCESS_TOKEN",
      operation: "CREATE",
      parameters: { tokenType: "PERSONAL", name: "test token", actorUrn: ALICE, ownerUrn: ROOT },
      auditStamp: { actor: ROOT, time: expect.any(Number) },
      version: 0,
    });
    expect(rotate).toMatchObject({ modifier: tokenUrn(successor) });
    expect(revoke).toMatchObject({ parameters: { reason: "revoked", actorUrn: ALICE } });
    const text = JSON.stringify(events);
    expect(text).not.toContain(token);
    expect(text).not.toContain(hashToken(token, h.config.TOKEN_SALT));
  });

  it("revokeActorAccess writes a REVOKE per token and a SUSPEND per schedule, in its transaction", async () => {
    const DAVE = "urn:li:corpuser:events-dave";
    const since = await head();
    const { id } = await createToken(h, DAVE);
    await h.prisma.metadataTest.create({
      data: {
        urn: "urn:li:test:events-dave-schedule",
        name: "nightly",
        category: "c",
        definitionText: "{}",
        definition: {},
        onTypes: ["dataset"],
        createdBy: DAVE,
        ownerUrn: DAVE,
        scheduleCron: "0 3 * * *",
      },
    });
    await gql(`mutation($input: RevokeActorAccessInput!) { revokeActorAccess(input: $input) { revokedTokenIds } }`, {
      input: { actorUrn: DAVE, reason: "left the company" },
    });
    const events = (await list(asRoot, { since, eventTypes: ["EntityChangeEvent_v1"] })).events.filter(
      (e) => e.operation !== "CREATE",
    );
    expect(events.map((e) => [e.category, e.operation, e.entityUrn])).toEqual([
      ["ACCESS_TOKEN", "REVOKE", tokenUrn(id)],
      ["SCHEDULE", "SUSPEND", "urn:li:test:events-dave-schedule"],
    ]);
    expect(JSON.parse(events[0]!.payload)).toMatchObject({ parameters: { reason: "actorAccessRevoked" } });
    expect(JSON.parse(events[1]!.payload)).toMatchObject({
      entityType: "test",
      parameters: { ownerUrn: DAVE, reason: expect.stringContaining("left the company") },
    });
  });

  it("the gateways' notify-expiring-tokens chore writes EXPIRING_SOON, readable by the token's user", async () => {
    const since = await head();
    const alice = await createToken(h, ALICE);
    const soon = await createToken(h, ALICE);
    await h.prisma.accessToken.update({
      where: { id: soon.id },
      data: { createdAt: new Date(Date.now() - 20 * 86_400_000), expiresAt: new Date(Date.now() + 5 * 86_400_000) },
    });
    const chores = new Producer("gatewayChores", h.connections.redis, h.config.QUEUE_PREFIX);
    try {
      await chores.queue.add("notify-expiring-tokens", {});
      const events = await eventually(
        "the notice in Alice's stream",
        async () => {
          const page = await list(bearer(alice.token), { since, categories: ["ACCESS_TOKEN"] });
          return page.events.filter((e) => e.operation === "EXPIRING_SOON");
        },
        { until: (found: Event[]) => found.length > 0 },
      );
      expect(events.map((e) => e.entityUrn)).toEqual([tokenUrn(soon.id)]);
      expect(JSON.parse(events[0]!.payload)).toMatchObject({ parameters: { daysLeft: 7, actorUrn: ALICE } });
    } finally {
      await chores.close();
    }
  });

  it("a truncation run by the task runner writes its TASK COMPLETE with the rows it deleted", async () => {
    const since = await head();
    const store = new TimeseriesStore(h.database.pool);
    const ref = { entityType: "dataset", aspectName: "datasetProfile" };
    const T0 = Date.UTC(2026, 0, 1);
    const rows = Array.from({ length: 30 }, (_, i) => ({
      urn: `urn:li:dataset:(urn:li:dataPlatform:x,events${i % 3},PROD)`,
      timestampMillis: T0 + i * 3_600_000,
      valueJson: "{}",
    }));
    await store.prepare([{ ...ref, rows }]);
    await inTransaction(h.database.pool, (client) => store.append(client, ref, rows));
    const worker = await startTruncationWorker(h);
    try {
      const res = await h.post("/gms/operations?action=truncateTimeseriesAspect", {
        entityType: "dataset",
        aspect: "datasetProfile",
        endTimeMillis: T0 + 10 * 3_600_000,
        dryRun: false,
      });
      const taskId = res.body.value as string;
      const events = await eventually(
        "the task's event",
        async () => (await list(asRoot, { since, categories: ["TASK"] })).events,
        { until: (found: Event[]) => found.length > 0 },
      );
      expect(events.map((e) => [e.operation, e.entityUrn])).toEqual([["COMPLETE", `urn:li:dataHubTask:${taskId}`]]);
      expect(JSON.parse(events[0]!.payload)).toMatchObject({
        entityType: "dataHubTask",
        parameters: {
          taskType: "truncation",
          aspect: "datasetProfile",
          rowsDeleted: 10,
          bytesFreed: expect.any(Number),
        },
        auditStamp: { actor: ROOT },
      });
    } finally {
      await worker.close();
    }
  });

  it("pages with since and next, and a consumer that was down catches up from its cursor", async () => {
    const since = await head();
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await createToken(h, BOB)).id);

    const seen: string[] = [];
    let cursor = since;
    for (let pages = 0; pages < 10; pages++) {
      const page = await list(asRoot, { since: cursor, count: 2, categories: ["ACCESS_TOKEN"] });
      if (page.events.length === 0) break;
      expect(page.events.length).toBeLessThanOrEqual(2);
      seen.push(...page.events.map((e) => e.entityUrn));
      cursor = page.next;
    }
    expect(seen).toEqual(ids.map(tokenUrn));

    // Down for a while: three more changes, read from the cursor it kept, none twice.
    const later: string[] = [];
    for (let i = 0; i < 3; i++) later.push((await createToken(h, BOB)).id);
    const caughtUp = await list(asRoot, { since: cursor, categories: ["ACCESS_TOKEN"] });
    expect(caughtUp.events.map((e) => e.entityUrn)).toEqual(later.map(tokenUrn));
    expect((await list(asRoot, { since: caughtUp.next, categories: ["ACCESS_TOKEN"] })).events).toEqual([]);
  });

  it("shows each caller only what it may read now, and moves its cursor past the rest", async () => {
    const since = await head();
    const alice = await createToken(h, ALICE);
    const bob = await createToken(h, BOB);
    const carol = await createToken(h, CAROL);

    const aliceSees = await list(bearer(alice.token), { since });
    expect(aliceSees.events.map((e) => e.entityUrn)).toEqual([tokenUrn(alice.id)]);
    expect(BigInt(aliceSees.next)).toBeGreaterThanOrEqual(BigInt(since) + 3n); // past Bob's and Carol's too
    expect((await list(bearer(bob.token), { since })).events.map((e) => e.entityUrn)).toEqual([tokenUrn(bob.id)]);

    const policy = (await gql(`mutation($input: PolicyUpdateInput!) { createPolicy(input: $input) }`, {
      input: {
        name: "events reader",
        state: "ACTIVE",
        privileges: ["MANAGE_ACCESS_TOKENS"],
        actors: { users: [CAROL] },
      },
    })) as { createPolicy: string };
    // The policy's own change is no ACCESS_TOKEN event: Carol, holding MANAGE_ACCESS_TOKENS now, reads all three.
    const carolSees = await list(bearer(carol.token), { since, categories: ["ACCESS_TOKEN"] });
    expect(carolSees.events.map((e) => e.entityUrn)).toEqual([alice, bob, carol].map((t) => tokenUrn(t.id)));

    await gql(`mutation($urn: String!) { deletePolicy(urn: $urn) }`, { urn: policy.createPolicy });
    const afterLoss = await list(bearer(carol.token), { since, categories: ["ACCESS_TOKEN"] });
    expect(afterLoss.events.map((e) => e.entityUrn)).toEqual([tokenUrn(carol.id)]);

    // entityUrn narrows to one entity's events, still only those the caller may read.
    expect((await list(bearer(alice.token), { since, entityUrn: tokenUrn(bob.id) })).events).toEqual([]);
    expect(
      (await list(asRoot, { since, entityUrn: tokenUrn(bob.id), eventTypes: ["EntityChangeEvent_v1"] })).events,
    ).toHaveLength(1);
  });

  it("tells a token's user of it only as the API would: not without the privilege, not through a token scoped elsewhere", async () => {
    const ERIN = "urn:li:corpuser:events-erin"; // nothing: listAccessTokens refuses her
    const FRANK = "urn:li:corpuser:events-frank";
    await grant(h, FRANK, ["GENERATE_PERSONAL_ACCESS_TOKENS", "GET_ENTITY"]);
    const since = await head();
    const erin = await createToken(h, ERIN);
    const frank = await createToken(h, FRANK);
    const frankScoped = await createToken(h, FRANK, systemClientHeaders(ROOT), { scopes: ["GET_ENTITY"] });
    const LIST_TOKENS = `query($u: String!) { listAccessTokens(input: {start: 0, count: 10, filters: [{field: "actorUrn", values: [$u]}]}) { total } }`;
    expect((await h.graphql(LIST_TOKENS, { u: ERIN }, bearer(erin.token))).body.errors?.[0]?.extensions?.code).toBe(
      "FORBIDDEN",
    );
    const categories = ["ACCESS_TOKEN"];
    expect((await list(bearer(erin.token), { since, categories })).events).toEqual([]);
    expect((await list(bearer(frankScoped.token), { since, categories })).events).toEqual([]);
    expect((await list(bearer(frank.token), { since, categories })).events.map((e) => e.entityUrn)).toEqual(
      [frank, frankScoped].map((t) => tokenUrn(t.id)),
    );
  });

  it("reports the oldest position kept, so a reader can tell it missed pruned events", async () => {
    await createToken(h, ALICE);
    const before = await list(asRoot, { count: 1 });
    expect(before.oldest).not.toBeNull();
    const last = await head();
    await h.database.pool.query("UPDATE platform_event SET created_at = now() - interval '30 days' WHERE seq <= $1", [
      last,
    ]);
    await h.database.pool.query(
      `INSERT INTO platform_event_cursor (consumer, seq) VALUES ('evaluate-on-change', $1)
       ON CONFLICT (consumer) DO UPDATE SET seq = EXCLUDED.seq`,
      [last],
    );
    expect(await prunePlatformEvents(h.database.pool, h.config.PLATFORM_EVENT_RETENTION_DAYS, 10_000)).toBeGreaterThan(
      0,
    );
    const { id } = await createToken(h, ALICE);
    const after = await list(asRoot, { since: before.oldest });
    expect(BigInt(after.oldest!)).toBeGreaterThan(BigInt(last)); // everything up to `last` was pruned
    expect(after.events.map((e) => e.entityUrn)).toEqual([tokenUrn(id)]);
  });

  it("mdp events list reads the caller's stream from the position it was given", async () => {
    const since = await head();
    const alice = await createToken(h, ALICE);
    await createToken(h, BOB);
    await sequence();
    const config = await mkdtemp(path.join(tmpdir(), "mdp-events-"));
    try {
      const { stdout } = await execFileAsync(
        process.execPath,
        [MDP, "--json", "events", "list", "--since", since, "--category", "ACCESS_TOKEN"],
        { env: { ...process.env, MDP_URL: h.baseUrl, MDP_TOKEN: alice.token, XDG_CONFIG_HOME: config } },
      );
      const page = JSON.parse(stdout) as { events: Array<{ entityUrn: string; payload: { operation: string } }> };
      expect(page.events.map((e) => [e.entityUrn, e.payload.operation])).toEqual([[tokenUrn(alice.id), "CREATE"]]);
      const table = await execFileAsync(process.execPath, [MDP, "events", "list", "--since", since], {
        env: { ...process.env, MDP_URL: h.baseUrl, MDP_TOKEN: alice.token, XDG_CONFIG_HOME: config },
      });
      expect(table.stdout).toContain("ACCESS_TOKEN CREATE");
      expect(table.stdout).toMatch(/next: \d+/);
    } finally {
      await rm(config, { recursive: true, force: true });
    }
  });

  it("refuses bad arguments as BAD_USER_INPUT naming the argument and the limit", async () => {
    for (const [variables, words] of [
      [{ since: "soon" }, "since"],
      [{ count: 1001 }, "count must be between 1 and 1000"],
      [{ categories: ["TOKENS"] }, "categories"],
      [{ eventTypes: ["MetadataChangeProposal_v1"] }, "eventTypes"],
      [{ entityUrn: "not a urn" }, "entityUrn"],
    ] as const) {
      const res = await h.graphql(LIST, variables, asRoot);
      expect(res.body.errors?.[0]?.extensions?.code).toBe("BAD_USER_INPUT");
      expect(res.body.errors?.[0]?.message).toContain(words);
    }
  });
});
