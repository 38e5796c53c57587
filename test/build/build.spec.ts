/**
 * The production build, as `.ci/run`'s build step leaves it before the tests (the build itself is that step, not a
 * test: run `pnpm build` first when running this file alone): the files the compiled code reads beside it, then the
 * gateway and the workers started from their dist/ (compiled JavaScript, no TypeScript loader) on a database and queue
 * prefix of this test's own, and one call of each capability: an access token over GraphQL, a truncation (dry run,
 * then a task that completes), an evaluation.
 * Also holds the deployment files to what the build needs: the same node flags everywhere a built service starts,
 * a restart policy and a stop grace period longer than the 25 s drain on every compose service, worker health checks.
 */
import { existsSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { createDatabase, inTransaction, TimeseriesStore, type Database } from "@mdp/db";
import { createTestDatabase } from "@mdp/db/testing";
import { BUILT_SERVICE_NODE_FLAGS } from "../../scripts/service-command";
import {
  freePort,
  monitorUrl,
  startService,
  systemClient,
  uniqueName,
  waitFor,
  waitForOutput,
  waitUntilReady,
  type RunningService,
} from "../support/services";

const ROOT = path.resolve(__dirname, "..", "..");
const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";
const SERVICES = ["gateway", "truncation-worker", "evaluation-worker", "webhook-worker"] as const;
/** the workers' and the gateway's forced exit after SIGTERM (runUntilSignalled, gateway main.ts) */
const DRAIN_SECONDS = 25;
const headers = systemClient();
const read = (file: string) => readFileSync(path.join(ROOT, file), "utf8");

describe("the build", () => {
  const LIBS = ["libs/core", "libs/db", "libs/metadata-tests", "libs/queues", "libs/webhooks"];
  /** what `pnpm build` leaves that the services started below need; absent: no build was made */
  const missing = [
    ...LIBS.map((pkg) => `${pkg}/dist/index.js`),
    ...SERVICES.map((name) => `services/${name}/dist/main.js`),
    "libs/core/dist/registry/default-entity-registry.yaml",
    "libs/db/dist/generated/prisma/client.js",
    "libs/db/dist/prisma/migrations/migration_lock.toml",
    "services/evaluation-worker/dist/evaluation-thread.cjs",
    "services/evaluation-worker/dist/evaluation-thread.js",
    "services/gateway/dist/assets/explorer.js",
    "services/gateway/dist/assets/explorer.css",
  ].filter((file) => !existsSync(path.join(ROOT, file)));
  const built = { ok: missing.length === 0 };

  it("has every lib and service compiled, with the files the compiled code reads beside it", () => {
    if (!built.ok)
      throw new Error(`no build (run \`pnpm build\` first; CI does before its tests): ${missing.join(", ")}`);
  });

  describe("the deployment files", () => {
    const compose = createRequire(path.join(ROOT, "libs/core/package.json"))("yaml").parse(read("docker-compose.yml"), {
      merge: true,
    }) as { services: Record<string, Record<string, unknown>> };
    const flags = BUILT_SERVICE_NODE_FLAGS.join(" ");

    it("starts every built service with the same node flags: package scripts, Dockerfile, docker-compose", () => {
      for (const name of SERVICES) {
        const pkg = JSON.parse(read(`services/${name}/package.json`)) as { scripts: Record<string, string> };
        expect(pkg.scripts["start:prod"]).toBe(`node ${flags} dist/main.js`);
        expect(compose.services[name]?.command).toEqual(["node", ...BUILT_SERVICE_NODE_FLAGS, "dist/main.js"]);
      }
      const cmds = read("Dockerfile").match(/^CMD .*$/gm) ?? [];
      expect(cmds).toHaveLength(SERVICES.length);
      for (const cmd of cmds) {
        expect(JSON.parse(cmd.slice("CMD ".length))).toEqual(["node", ...BUILT_SERVICE_NODE_FLAGS, "dist/main.js"]);
      }
    });

    it("gives every compose service a restart policy and a stop grace period longer than the drain", () => {
      for (const [name, service] of Object.entries(compose.services)) {
        expect([name, typeof service.restart]).toEqual([name, "string"]);
        const grace = /^(\d+)s$/.exec(String(service.stop_grace_period))?.[1];
        expect([name, Number(grace) > DRAIN_SECONDS]).toEqual([name, true]);
      }
      // Workers are checked on their monitoring port's /ready, as the gateway on its own.
      for (const name of ["truncation-worker", "evaluation-worker", "webhook-worker"]) {
        const test = (compose.services[name]?.healthcheck as { test?: string[] } | undefined)?.test ?? [];
        expect(test.slice(0, 3)).toEqual(["CMD", "node", "-e"]);
        expect(test[3]).toContain("/ready");
      }
    });

    it("keeps secrets, local data and tests out of the image", () => {
      const ignored = read(".dockerignore").split("\n");
      for (const entry of [".env", ".data", "**/test", "**/*.spec.ts"]) expect(ignored).toContain(entry);
    });
  });

  describe("the built services", () => {
    let db: Awaited<ReturnType<typeof createTestDatabase>>;
    let database: Database;
    let services: RunningService[] = [];
    let baseUrl: string;

    const post = async (route: string, body: unknown) => {
      const res = await fetch(`${baseUrl}${route}`, { method: "POST", headers, body: JSON.stringify(body) });
      return { status: res.status, body: (await res.json()) as { value?: unknown; data?: unknown; errors?: unknown } };
    };

    beforeAll(async () => {
      if (!built.ok) return; // the first test says why
      db = await createTestDatabase("e2e_build");
      database = createDatabase(db.url);
      const port = await freePort();
      baseUrl = `http://127.0.0.1:${port}`;
      const env = { DATABASE_URL: db.url, REDIS_URL, QUEUE_PREFIX: uniqueName("e2e-build"), PORT: String(port) };
      services = SERVICES.map((name) => startService(name, env, { built: true }));
      await Promise.all([
        waitUntilReady(baseUrl, services[0]),
        ...services.slice(1).map((worker) => waitForOutput(worker, "worker running")),
      ]);
    }, 60_000);

    afterAll(async () => {
      const codes = await Promise.all(services.map((s) => s.stop()));
      expect(codes).toEqual(services.map(() => 0)); // a graceful stop from the build too
      await database?.close();
      await db?.drop();
    });

    beforeEach(() => {
      if (!built.ok) throw new Error("no build (see the first test)");
    });

    it("runs compiled JavaScript: dist/main.js under the mdp-built condition, no TypeScript loader", () => {
      for (const service of services) {
        const cmdline = readFileSync(`/proc/${service.process.pid}/cmdline`, "utf8").split("\0").filter(Boolean);
        expect(cmdline.slice(1)).toEqual([
          ...BUILT_SERVICE_NODE_FLAGS,
          path.join(ROOT, "services", service.name, "dist", "main.js"),
        ]);
        expect(cmdline.join(" ")).not.toMatch(/register-ts|tsx|\.ts\b/);
      }
    });

    it("workers answer their health checks from the build", async () => {
      for (const worker of services.slice(1)) {
        const base = await monitorUrl(worker);
        expect((await fetch(`${base}/health`)).status).toBe(200);
        await waitUntilReady(base, worker);
      }
    });

    it("creates an access token over GraphQL", async () => {
      const res = await post("/api/graphql", {
        query: `mutation { createAccessToken(input: {type: PERSONAL, actorUrn: "urn:li:corpuser:admin", duration: ONE_DAY, name: "build"}) { accessToken metadata { id } } }`,
      });
      expect(res.status).toBe(200);
      const token = (res.body.data as { createAccessToken: { accessToken: string } }).createAccessToken.accessToken;
      const me = await fetch(`${baseUrl}/api/graphql`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
        body: JSON.stringify({ query: "{ me { urn } }" }),
      });
      expect(await me.json()).toEqual({ data: { me: { urn: "urn:li:corpuser:admin" } } });
    });

    it("truncates: a dry run, then a task the worker completes", async () => {
      const profile = { entityType: "dataset", aspectName: "datasetProfile" };
      const cutoff = 1_700_000_000_000;
      const rows = [cutoff - 2000, cutoff - 1000, cutoff, cutoff + 1000].map((t, i) => ({
        urn: `urn:li:dataset:(urn:li:dataPlatform:hive,b${i},PROD)`,
        timestampMillis: t,
        valueJson: JSON.stringify({ timestampMillis: t, rowCount: i }),
      }));
      const store = new TimeseriesStore(database.pool);
      await store.prepare([{ ...profile, rows }]);
      await inTransaction(database.pool, (client) => store.append(client, profile, rows));
      const request = { entityType: "dataset", aspect: "datasetProfile", endTimeMillis: cutoff };

      const dry = await post("/gms/operations?action=truncateTimeseriesAspect", request);
      expect(dry).toMatchObject({ status: 200, body: { value: expect.stringMatching(/^Delete 2 out of 4 rows/) } });
      const real = await post("/gms/operations?action=truncateTimeseriesAspect", { ...request, dryRun: false });
      expect(real.status).toBe(200);
      const taskId = real.body.value as string;
      let state = "";
      await waitFor(
        `task ${taskId} to complete`,
        async () => {
          const status = await post("/gms/operations?action=getTaskStatus", { taskId });
          state = (status.body.value as { state: string }).state;
          return state === "completed" || state === "failed";
        },
        30_000,
      );
      expect(state).toBe("completed");
      expect((await store.values(profile, rows[2]!.urn, { limit: 10 })).map((r) => r.timestampMillis)).toEqual([
        cutoff,
      ]);
    });

    it("evaluates a metadata test in the evaluation worker", async () => {
      const urn = "urn:li:dataset:(urn:li:dataPlatform:hive,db.built,PROD)";
      const proposal = {
        entityType: "dataset",
        entityUrn: urn,
        aspectName: "datasetProperties",
        changeType: "UPSERT",
        aspect: { contentType: "application/json", value: JSON.stringify({ description: "orders" }) },
      };
      expect((await post("/gms/aspects?action=ingestProposal", { proposal })).status).toBe(200);
      const created = await post("/api/graphql", {
        query: `mutation($input: CreateTestInput!) { createTest(input: $input) }`,
        variables: {
          input: {
            id: "built",
            name: "Has a description",
            category: "Documentation",
            // regex_match runs on re2js: it must load from the build's node_modules too
            definition: {
              json: "on: {types: [dataset]}\nrules: [{property: datasetProperties.description, operator: regex_match, values: ['^ord']}]",
            },
          },
        },
      });
      expect(created.body).toEqual({ data: { createTest: "urn:li:test:built" } });
      const evaluated = await post("/gms/test?action=evaluate", { urn });
      expect(evaluated).toMatchObject({
        status: 200,
        body: { value: { urn, passing: [{ test: "urn:li:test:built", type: "SUCCESS" }], failing: [] } },
      });
    });
  });
});
