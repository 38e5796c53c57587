/**
 * DataHub's Python SDK and datahub-gc against the real gateway (HTTP, PostgreSQL, Redis, a BullMQ truncation worker):
 * the SDK's connection check and GraphQL calls, datahub-gc's expired-token cleanup and truncations, each request as
 * DataHub's code builds it (fixtures/datahub/, with the DataHub path of each text).
 */
import { stripIgnoredCharacters } from "graphql";
import { SYSTEM_ACTOR_URN } from "@mdp/core";
import { eventually } from "@mdp/core/testing";
import { DAY_MILLIS, inTransaction, TimeseriesStore, type TimeseriesAspectRef } from "@mdp/db";
import {
  ROOT,
  bearer,
  createToken,
  grant,
  mintToken,
  startGateway,
  startTruncationWorker,
  type Harness,
} from "./support/gateway-harness";
import {
  GC_TRUNCATE_PATH,
  GC_TRUNCATIONS,
  SDK_CONFIG_PATH,
  SDK_GRAPHQL_PATH,
  SDK_SESSION_HEADERS,
  gcExpiredTokensVariables,
  gcTruncatePayload,
  gcTruncateRetryPayload,
  sdkBearer,
  sdkSystemAuth,
  webAppOwnTokensVariables,
} from "./fixtures/datahub/requests";
import { WEB, GC, ALICE, BOB, SYSTEM_ID, SYSTEM_SECRET, TokenList, SdkAnswer } from "./support/datahub-clients";

describe("DataHub's clients, unchanged", () => {
  let h: Harness;
  let alice: string;
  /** POST as DataHub's Python SDK does: its session headers, the JSON body, to `{gms}` + path. */
  const sdkPost = async (gms: string, p: string, body: unknown, auth: Record<string, string>) => {
    const res = await fetch(`${h.baseUrl}${gms}${p}`, {
      method: "POST",
      headers: { ...SDK_SESSION_HEADERS, ...auth },
      body: JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as SdkAnswer };
  };
  /** DataHubGraph.execute_graphql: the minified document and its variables to {gms}/api/graphql. */
  const executeGraphql = (gms: string, query: string, variables: unknown, auth: Record<string, string>) =>
    sdkPost(gms, SDK_GRAPHQL_PATH, { query: stripIgnoredCharacters(query), variables }, auth);

  beforeAll(async () => {
    h = await startGateway({ ACCESS_TOKEN_ALLOW_NO_EXPIRY: "true" });
    await grant(h, ALICE, ["GENERATE_PERSONAL_ACCESS_TOKENS"]);
    // Never expiring: the web app's documents below create tokens with it (the web app itself goes through the
    // frontend's system client), and a token created with a token may not outlive it.
    alice = (await createToken(h, ALICE, undefined, { duration: "NO_EXPIRY" })).token;
    // A token ALICE made herself, as the web app's tests leave her one: the SDK lists her own tokens.
    await createToken(h, ALICE, bearer(alice));
  });
  afterAll(() => h.close());

  describe("the Python SDK (graph/client.py, emitter/rest_emitter.py, cli/config_utils.py)", () => {
    it.each(["/gms", "/api/gms"])(
      "passes the connection check at GET %s/config and posts GraphQL to {gms}/api/graphql",
      async (gms) => {
        const config = await fetch(`${h.baseUrl}${gms}${SDK_CONFIG_PATH}`, {
          headers: { ...SDK_SESSION_HEADERS, ...sdkBearer(alice) },
        });
        expect(config.status).toBe(200);
        const body = (await config.json()) as Record<string, unknown>;
        expect(body.noCode).toBe("true");
        expect(JSON.stringify(body)).not.toMatch(/secret|password|postgres|redis/i);

        const res = await executeGraphql(gms, WEB.listAccessTokens!, webAppOwnTokensVariables(ALICE), sdkBearer(alice));
        expect(res.status).toBe(200);
        expect(res.body.data!.listAccessTokens.total).toBeGreaterThan(0);
      },
    );

    it("authenticates the system client as DataHub sends it (Basic id:secret, not base64) with X-DataHub-Actor", async () => {
      const res = await executeGraphql("/gms", "{ me { urn } }", undefined, {
        ...sdkSystemAuth(SYSTEM_ID, SYSTEM_SECRET),
        "X-DataHub-Actor": ALICE,
      });
      expect(res.body).toEqual({ data: { me: { urn: ALICE } } });
      const wrong = await executeGraphql("/gms", "{ me { urn } }", undefined, {
        ...sdkSystemAuth(SYSTEM_ID, "nope"),
        "X-DataHub-Actor": ALICE,
      });
      expect(wrong.status).toBe(401);
      // Naming nobody, the system client acts as the system actor, as DataHub's does.
      const noActor = await executeGraphql(
        "/gms",
        "{ me { urn } }",
        undefined,
        sdkSystemAuth(SYSTEM_ID, SYSTEM_SECRET),
      );
      expect(noActor.body).toEqual({ data: { me: { urn: SYSTEM_ACTOR_URN } } });
    });

    it("never lets X-DataHub-Actor make a token act for someone else", async () => {
      const res = await executeGraphql("/gms", "{ me { urn } }", undefined, {
        ...sdkBearer(alice),
        "X-DataHub-Actor": ROOT,
      });
      expect(res.status).toBe(403);
      const both = await executeGraphql("/gms", "{ me { urn } }", undefined, {
        ...sdkSystemAuth(SYSTEM_ID, SYSTEM_SECRET),
        "X-DataHub-Actor": ALICE,
        "X-Platform-Actor": ROOT,
      });
      expect(both.status).toBe(400);
    });
  });

  describe("datahub-gc (source/gc/datahub_gc.py)", () => {
    // As datahub-gc runs with the system client's credentials: no actor header, so it acts as the system actor.
    const gcAuth = () => sdkSystemAuth(SYSTEM_ID, SYSTEM_SECRET);

    it("revokes every expired token with its own list/revoke loop, and leaves live ones", async () => {
      const nowSeconds = Math.floor(Date.now() / 1000);
      for (let i = 0; i < 12; i++) await mintToken(h, i % 2 ? ALICE : BOB, nowSeconds - 3600 - i);
      // revoke_expired_tokens, as written: list expired, revoke each, until total is 0 (bounded here)
      let revoked = 0;
      for (let round = 0; round < 10; round++) {
        const listed = await executeGraphql(
          "/gms",
          GC.listAccessTokens!,
          gcExpiredTokensVariables(Date.now()),
          gcAuth(),
        );
        expect(listed.status).toBe(200);
        const { total, tokens } = listed.body.data!.listAccessTokens as TokenList;
        if (total === 0 || tokens.length === 0) break;
        for (const token of tokens) {
          const res = await executeGraphql("/gms", GC.revokeAccessToken!, { tokenId: token.id }, gcAuth());
          expect(res.body.data).toEqual({ revokeAccessToken: true });
          revoked++;
        }
      }
      expect(revoked).toBeGreaterThanOrEqual(12);
      const audited = await h.prisma.auditEvent.count({
        where: { action: "accessToken.revoke", actorUrn: SYSTEM_ACTOR_URN },
      });
      expect(audited).toBe(revoked);
      const after = await executeGraphql("/gms", GC.listAccessTokens!, gcExpiredTokensVariables(Date.now()), gcAuth());
      expect(after.body.data!.listAccessTokens.total).toBe(0);
      expect((await h.graphql("{ me { urn } }", {}, bearer(alice))).body.data).toEqual({ me: { urn: ALICE } });
    });

    it("truncates every aspect it names, as it spells them, and follows the dry run it parses", async () => {
      const store = new TimeseriesStore(h.database.pool);
      const worker = await startTruncationWorker(h);
      try {
        const now = Date.now();
        const cutoff = now - 30 * DAY_MILLIS; // x_days_ago_millis(truncate_index_older_than_days=30)
        const refs: TimeseriesAspectRef[] = [
          { entityType: "dataset", aspectName: "operation" },
          { entityType: "dataset", aspectName: "datasetUsageStatistics" },
          { entityType: "chart", aspectName: "chartUsageStatistics" },
          { entityType: "dashboard", aspectName: "dashboardUsageStatistics" },
          { entityType: "query", aspectName: "queryUsageStatistics" },
        ];
        for (const ref of refs) {
          const rows = [40, 35, 31, 29, 1].map((days, i) => ({
            urn: `urn:li:${ref.entityType}:r${i}`,
            timestampMillis: now - days * DAY_MILLIS,
            valueJson: "{}",
          }));
          await store.prepare([{ ...ref, rows }]);
          await inTransaction(h.database.pool, (client) => store.append(client, ref, rows));
        }
        for (const { aspect_name, entity_type } of GC_TRUNCATIONS) {
          // _truncate_timeseries_helper: first the real run, then the watched dry runs
          const run = await sdkPost(
            "/gms",
            GC_TRUNCATE_PATH,
            gcTruncatePayload(entity_type, aspect_name, cutoff, false),
            gcAuth(),
          );
          expect(run.status).toBe(200);
          const taskId = run.body.value as string;
          // operators follow it with getEsTaskStatus
          const status = await eventually(
            "getEsTaskStatus says completed",
            async () => {
              const res = await sdkPost("/gms", "/operations?action=getEsTaskStatus", { task: taskId }, gcAuth());
              expect(res.status).toBe(200);
              return JSON.parse(res.body.value as string) as { completed: boolean; status: { state: string } };
            },
            { timeoutMs: 20_000, until: (s) => s.completed },
          );
          expect(status.status.state).toBe("completed");
          // the retry it makes after an OperationalError is accepted too
          const dry = await sdkPost(
            "/gms",
            GC_TRUNCATE_PATH,
            gcTruncateRetryPayload(entity_type, aspect_name, cutoff, true),
            gcAuth(),
          );
          const value = dry.body.value as string;
          expect(value).toContain("This was a dry run");
          expect(value).toContain("out of");
          const [toDelete, total] = (value.match(/\d+/g) ?? []).slice(0, 2).map(Number);
          expect({ toDelete, total }).toEqual({ toDelete: 0, total: 2 }); // strictly older than the cutoff went
        }
        const sizes = await sdkPost("/gms", "/operations?action=getIndexSizes", {}, gcAuth());
        const query = (sizes.body.value as { indexSizes: Array<Record<string, unknown>> }).indexSizes.find(
          (s) => s.entityName === "query",
        );
        expect(query).toMatchObject({ aspectName: "queryUsageStatistics", rowCount: 2 });
        expect(query!.sizeMb).toBe(query!.sizeInMb);
      } finally {
        await worker.close();
      }
    }, 120_000);

    it("refuses an aspect spelled in lower case when no registered aspect lowercases to it, and both force flags", async () => {
      const unknown = await sdkPost(
        "/gms",
        GC_TRUNCATE_PATH,
        gcTruncatePayload("dataset", "datasetusage", 1, true),
        gcAuth(),
      );
      expect(unknown.status).toBe(404);
      const mixed = await sdkPost(
        "/gms",
        GC_TRUNCATE_PATH,
        gcTruncatePayload("dataset", "DatasetUsageStatistics", 1, true),
        gcAuth(),
      );
      expect(mixed.status).toBe(404); // only DataHub's lower-case index spelling is an alias, not any casing
      const both = await sdkPost(
        "/gms",
        GC_TRUNCATE_PATH,
        { ...gcTruncateRetryPayload("dataset", "operation", 1, true), forceReindex: true },
        gcAuth(),
      );
      expect(both.status).toBe(400);
      expect(both.body.message).toContain("forceDeleteByQuery");
    });
  });
});
