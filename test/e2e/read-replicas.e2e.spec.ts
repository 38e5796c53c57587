/**
 * PostgreSQL read replicas (docs/postgres.md), on real servers: a private primary and a streaming hot standby made by
 * `pg_basebackup -R`, and the real gateway with DATABASE_REPLICA_URLS naming the standby. Listings are served by the
 * standby (counted by the standby's own statistics); a user reads its own write under a standby delayed on purpose
 * (recovery_min_apply_delay) while others read the delayed copy; a standby further behind than REPLICA_MAX_LAG_MS is
 * skipped; a user's read right after its own write is the standby's as soon as the standby has replayed it; the
 * evaluation worker's load reads the standby, but after its caller's own ingestion only once the standby has it; a
 * write through one gateway is read at once through another (positions shared in Redis); and the standby stopped and
 * started under load costs no caller an error, skipped within a second.
 */
import { eventually } from "@mdp/core/testing";
import { primaryAndStandby, queryOnce, type PrimaryAndStandby } from "../support/postgres-standby";
import {
  gatewayUrl,
  monitorUrl,
  queuePrefix,
  startService,
  systemClient,
  waitForOutput,
  waitUntilReady,
  type RunningService,
} from "../support/services";

const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";
const ADMIN = "urn:li:corpuser:admin";
const MAX_LAG_MS = 4000;
const LIST = `query($u: String!) {
  listAccessTokens(input: {count: 1000, filters: [{field: "actorUrn", value: $u}]}) { total tokens { name } }
}`;
const CREATE = `mutation($name: String!) {
  createAccessToken(input: {type: PERSONAL, actorUrn: "${ADMIN}", duration: ONE_MONTH, name: $name}) { metadata { id } }
}`;

interface ReplicaReport {
  name: string;
  state: string;
  lagMs: number | null;
}

describe("read replicas: a streaming hot standby beside the primary", () => {
  let servers: PrimaryAndStandby;
  let gateway: RunningService;
  /** a second gateway on the same servers: a user's requests spread over both, as behind a load balancer */
  let gatewayB: RunningService;
  let worker: RunningService;
  let baseUrl: string;
  let baseUrlB: string;
  /** the evaluation worker's monitoring port: its /ready and /metrics show the replicas as the gateway's do */
  let workerUrl: string;

  /** As `actor` through the system client; without one, as the system actor (every privilege, no token rows read). */
  const graphql = async (query: string, variables: Record<string, unknown>, actor?: string, via = baseUrl) => {
    const headers = systemClient(actor);
    if (!actor) delete headers["x-platform-actor"];
    const res = await fetch(`${via}/api/graphql`, {
      method: "POST",
      headers,
      body: JSON.stringify({ query, variables }),
    });
    const body = (await res.json()) as { data?: Record<string, unknown>; errors?: unknown };
    if (res.status !== 200 || !body.data) throw new Error(`${res.status}: ${JSON.stringify(body.errors)}`);
    return body.data;
  };
  const tokenNames = async (actor?: string, via = baseUrl) => {
    const data = (await graphql(LIST, { u: ADMIN }, actor, via)) as {
      listAccessTokens: { total: number; tokens: { name: string }[] };
    };
    return data.listAccessTokens.tokens.map((t) => t.name);
  };
  const create = (name: string, via = baseUrl) => graphql(CREATE, { name }, ADMIN, via);
  const post = async (path: string, body: unknown, actor?: string, via = baseUrl) => {
    const headers = systemClient(actor);
    if (!actor) delete headers["x-platform-actor"];
    const res = await fetch(`${via}${path}`, { method: "POST", headers, body: JSON.stringify(body) });
    const answer = (await res.json()) as { value: unknown };
    if (res.status !== 200) {
      const logs = [gateway, gatewayB, worker].map((p) => `--- ${p.name}\n${p.output().slice(-3000)}`).join("\n");
      throw new Error(`${path}: ${res.status} ${JSON.stringify(answer)}\n${logs}`);
    }
    return answer.value;
  };
  const standbyHas = async (name: string) =>
    (
      await queryOnce<{ n: number }>(
        servers.standbyUrl,
        `SELECT count(*)::int AS n FROM access_token WHERE name = '${name}'`,
      )
    )[0]!.n > 0;
  /**
   * Creates a token named `name` through `via`, then runs `reads` of it, and returns their answers with the name
   * written. The reads must end while the delayed standby still lacks the write: when a machine loaded by other suites
   * lets the standby's delay run out first (the answers then say nothing of who read where), the write is made again,
   * under a new name, up to three times.
   */
  const readsBeforeReplay = async <T>(name: string, reads: (name: string) => Promise<T>, via = baseUrl) => {
    for (let attempt = 1; ; attempt++) {
      const written = attempt === 1 ? name : `${name}-${attempt}`;
      await create(written, via);
      const answers = await reads(written);
      if (!(await standbyHas(written)) || attempt === 3) return { written, answers };
    }
  };
  const replica = async (via = baseUrl): Promise<ReplicaReport> => {
    const body = (await (await fetch(`${via}/ready`)).json()) as { replicas?: ReplicaReport[] };
    return body.replicas![0]!;
  };
  const inState = (state: string, timeoutMs = 10_000, via = baseUrl) =>
    eventually(`replica1 ${state}`, async () => (await replica(via)).state === state, { timeoutMs });
  /** transactions the standby itself committed in the database: every read it served is one */
  const standbyTransactions = async () =>
    Number(
      (
        await queryOnce<{ n: string }>(
          servers.standbyUrl,
          "SELECT xact_commit AS n FROM pg_stat_database WHERE datname = current_database()",
        )
      )[0]!.n,
    );
  const replicaReadsMetric = async (via = baseUrl) => {
    const text = await (await fetch(`${via}/metrics`)).text();
    return Number(/^mdp_db_stale_reads_total\{server="replica"\} (\d+)/m.exec(text)?.[1] ?? "NaN");
  };

  beforeAll(async () => {
    servers = await primaryAndStandby();
    const env = {
      DATABASE_URL: servers.primaryUrl,
      DATABASE_REPLICA_URLS: servers.standbyUrl,
      REPLICA_MAX_LAG_MS: String(MAX_LAG_MS),
      RATE_LIMIT_TOKEN_MINTS_PER_MINUTE: "10000",
      REDIS_URL,
      QUEUE_PREFIX: queuePrefix("e2e-read-replicas"),
      PORT: "0",
    };
    gateway = startService("gateway", env);
    gatewayB = startService("gateway", env);
    worker = startService("evaluation-worker", env);
    [baseUrl, baseUrlB, workerUrl] = await Promise.all([gatewayUrl(gateway), gatewayUrl(gatewayB), monitorUrl(worker)]);
    await Promise.all([
      waitUntilReady(baseUrl, gateway),
      waitUntilReady(baseUrlB, gatewayB),
      waitForOutput(worker, "worker running"),
    ]);
    await Promise.all([inState("in-use"), inState("in-use", 10_000, baseUrlB), inState("in-use", 10_000, workerUrl)]);
  }, 60_000);

  afterAll(async () => {
    await Promise.all([gateway?.stop(), gatewayB?.stop(), worker?.stop()]);
    await servers?.destroy();
  });

  it("serves listings from the standby, counted by the standby's own statistics", async () => {
    await create("counted");
    const before = await standbyTransactions();
    const metricBefore = await replicaReadsMetric();
    const lists = 40;
    for (let i = 0; i < lists; i++) expect(await tokenNames()).toContain("counted");
    // The standby's backends report their counts within a few seconds of going idle.
    await eventually("the standby to count the listings", async () => (await standbyTransactions()) - before >= lists, {
      timeoutMs: 20_000,
    });
    expect((await replicaReadsMetric()) - metricBefore).toBeGreaterThanOrEqual(lists);
  });

  it("a user reads its own write at once while the standby, delayed, still serves others the older copy", async () => {
    await servers.delayStandby(2000);
    const { written: name, answers } = await readsBeforeReplay("mine-at-once", async () => ({
      mine: await tokenNames(ADMIN),
      others: await tokenNames(),
    }));
    // Its writer sees it at once (the primary, until the standby has replayed it)…
    expect(answers.mine).toContain(name);
    // …while another reader is served by the delayed standby, which has not replayed it yet…
    expect(answers.others).not.toContain(name);
    expect((await replica()).state).toBe("in-use");
    // …and sees it once the standby applies it.
    await eventually("the delayed standby to replay the write", async () => (await tokenNames()).includes(name));
    await servers.delayStandby(0);
  });

  it("a user's write through one gateway is read at once through another (its position shared in Redis)", async () => {
    await servers.delayStandby(2000);
    const { written, answers } = await readsBeforeReplay("written-through-a", async () => ({
      user: await tokenNames(ADMIN, baseUrlB),
      others: await tokenNames(undefined, baseUrlB),
    }));
    // Gateway B took no write of this user, yet reads the primary for it until the standby has the write…
    expect(answers.user).toContain(written);
    // …while another reader through B is served the delayed standby's older copy.
    expect(answers.others).not.toContain(written);
    expect((await replica(baseUrlB)).state).toBe("in-use");

    // B's own earlier write, once B reads the user's listings on the standby again (it has that write), does not
    // stand for the user's later write through A.
    await create("written-through-b", baseUrlB);
    await eventually("B to read the user's listings on the standby again", async () => {
      const before = await replicaReadsMetric(baseUrlB);
      const names = await tokenNames(ADMIN, baseUrlB);
      return names.includes("written-through-b") && (await replicaReadsMetric(baseUrlB)) > before;
    });
    await create("then-through-a");
    expect(await standbyHas("then-through-a")).toBe(false);
    expect(await tokenNames(ADMIN, baseUrlB)).toContain("then-through-a");
    await servers.delayStandby(0);
  });

  it("a user's read right after its write is the standby's once the standby has replayed it, not the primary's until the next probe", async () => {
    let served = 0;
    for (let i = 0; i < 5; i++) {
      const name = `replayed-${i}`;
      await create(name);
      const [{ lsn }] = (await queryOnce<{ lsn: string }>(
        servers.primaryUrl,
        "SELECT pg_current_wal_lsn()::text AS lsn",
      )) as [{ lsn: string }];
      await eventually("the standby to replay the write", async () => {
        const [row] = await queryOnce<{ replayed: boolean }>(
          servers.standbyUrl,
          `SELECT pg_last_wal_replay_lsn() >= '${lsn}'::pg_lsn AS replayed`,
        );
        return row!.replayed;
      });
      // Well inside the second between two probes: the gateway learns the standby has the write by asking it.
      const before = await replicaReadsMetric();
      expect(await tokenNames(ADMIN)).toContain(name);
      if ((await replicaReadsMetric()) > before) served++;
    }
    // Without the ask about 5% each (a probe between replay and read); with it all but an ask timed out (100 ms).
    expect(served).toBeGreaterThanOrEqual(3);
  });

  it(`skips a standby more than REPLICA_MAX_LAG_MS behind: every reader sees the latest write`, async () => {
    await servers.delayStandby(3 * MAX_LAG_MS);
    let n = 0;
    await eventually(
      "the delayed standby to be reported lagging",
      async () => {
        await create(`lag-${n++}`);
        return (await replica()).state === "lagging";
      },
      { timeoutMs: 20_000 },
    );
    await create("latest");
    expect(await tokenNames()).toContain("latest");
    await servers.delayStandby(0);
    await inState("in-use", 20_000);
  }, 45_000);

  it("evaluations read the standby; one right after its caller's own ingestion sees it, others the delayed copy", async () => {
    const urn = "urn:li:dataset:(urn:li:dataPlatform:hive,db.replicated,PROD)";
    const describe = (description: string) =>
      post(
        "/gms/aspects?action=ingestProposal",
        {
          proposal: {
            entityType: "dataset",
            entityUrn: urn,
            aspectName: "datasetProperties",
            changeType: "UPSERT",
            aspect: { contentType: "application/json", value: JSON.stringify({ description }) },
          },
        },
        ADMIN,
      );
    const passes = async (actor?: string, via = baseUrl) => {
      const value = (await post(
        "/gms/test?action=evaluate",
        { urn, tests: ["urn:li:test:replicated"] },
        actor,
        via,
      )) as {
        passing: unknown[];
      };
      return value.passing.length === 1;
    };
    await graphql(
      `
        mutation ($input: CreateTestInput!) {
          createTest(input: $input)
        }
      `,
      {
        input: {
          id: "replicated",
          name: "Described as orders",
          category: "Documentation",
          definition: {
            json: "on: {types: [dataset]}\nrules: [{property: datasetProperties.description, operator: regex_match, values: ['^ord']}]",
          },
        },
      },
      ADMIN,
    );
    await describe("nothing yet");
    await eventually("the standby to hold the entity", async () => {
      const rows = await queryOnce<{ n: number }>(
        servers.standbyUrl,
        `SELECT count(*)::int AS n FROM aspect WHERE urn = '${urn}'`,
      );
      return rows[0]!.n > 0;
    });
    // Every evaluation load reads metadata_test; nothing else reads it on the standby meanwhile (the probes read no table).
    const testScans = async () =>
      (
        await queryOnce<{ n: number }>(
          servers.standbyUrl,
          "SELECT (coalesce(seq_scan, 0) + coalesce(idx_scan, 0))::int AS n FROM pg_stat_user_tables WHERE relname = 'metadata_test'",
        )
      )[0]!.n;
    const before = await testScans();
    const workerReadsBefore = await replicaReadsMetric(workerUrl);
    const evaluations = 20;
    for (let i = 0; i < evaluations; i++) expect(await passes()).toBe(false);
    // The worker's own metrics count them (its /ready said the standby in use since the start).
    expect((await replicaReadsMetric(workerUrl)) - workerReadsBefore).toBeGreaterThanOrEqual(evaluations);
    const workerMetrics = await (await fetch(`${workerUrl}/metrics`)).text();
    expect(workerMetrics).toMatch(/^mdp_db_replica_in_use\{replica="replica1"\} 1$/m);
    expect(workerMetrics).toMatch(/^mdp_db_replica_lag_seconds\{replica="replica1"\} \d/m);
    await eventually(
      "the standby to count the evaluation loads",
      async () => (await testScans()) - before >= evaluations,
      {
        timeoutMs: 20_000,
      },
    );

    await servers.delayStandby(2000);
    /** whether the standby has replayed the ingestion of `description` */
    const standbyHasDescription = async (description: string) =>
      (
        await queryOnce<{ n: number }>(
          servers.standbyUrl,
          `SELECT count(*)::int AS n FROM aspect WHERE urn = '${urn}' AND value->>'description' = '${description}'`,
        )
      )[0]!.n > 0;
    /**
     * Ingests `description`, then evaluates as the writer and as another caller before the delayed standby replays
     * it: when a loaded machine lets the delay run out first, the standby's older copy (`older`) is restored and
     * replayed, and the write made again under a new description (up to three times).
     */
    const beforeReplay = async (description: string, older: string, via = baseUrl) => {
      for (let attempt = 1; ; attempt++) {
        if (attempt > 1) {
          const restored = `${older} ${attempt}`;
          await describe(restored);
          await eventually("the standby to replay the older copy", () => standbyHasDescription(restored), {
            timeoutMs: 20_000,
          });
        }
        const written = `${description} ${attempt}`;
        await describe(written);
        const answers = { writer: await passes(ADMIN, via), other: await passes(undefined, via) };
        if (!(await standbyHasDescription(written)) || attempt === 3) return answers;
      }
    };
    // Its writer's evaluation reads the write (the job carries the writer's WAL position), while another caller's is
    // served by the delayed standby, which has not replayed it yet…
    expect(await beforeReplay("orders", "nothing")).toEqual({ writer: true, other: false });
    // …and sees it once replayed.
    await eventually("the delayed standby to replay the ingestion", () => passes());

    // The same through another gateway: the evaluate request there carries the position the ingestion noted here.
    expect(await beforeReplay("none", "orders", baseUrlB)).toEqual({ writer: false, other: true });
    await servers.delayStandby(0);
  });

  it("the standby stopped and started under load: no caller sees an error, and it is skipped within a second", async () => {
    let running = true;
    const failures: string[] = [];
    let answered = 0;
    const load = Array.from({ length: 4 }, async () => {
      while (running) {
        try {
          await tokenNames();
          answered += 1;
        } catch (error) {
          failures.push((error as Error).message);
        }
      }
    });
    try {
      await eventually("load on the standby", async () => answered > 20);
      const stoppedAt = Date.now();
      await servers.stopStandby();
      await inState("unreachable");
      const skippedAfterMs = Date.now() - stoppedAt;
      const answeredWhileDown = answered;
      await eventually("reads while the standby is down", async () => answered > answeredWhileDown + 20);
      await servers.startStandby();
      await inState("in-use", 15_000);
      const metric = await replicaReadsMetric();
      await eventually("reads served by the standby again", async () => (await replicaReadsMetric()) > metric + 10);
      expect(skippedAfterMs).toBeLessThan(1000 + 500); // pg_ctl's own wait for the shutdown counted in
    } finally {
      running = false;
      await Promise.all(load);
    }
    expect(failures).toEqual([]);
  }, 45_000);
});
