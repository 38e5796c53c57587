/**
 * Client input the HTTP layer reads before any operation: sizes of urns and ids, the body's Content-Encoding and
 * nesting, and the ?action= name. Each is the caller's error (4xx) naming what and which limit, never a 500.
 */
import { gzipSync, deflateSync, brotliCompressSync } from "node:zlib";
import { MAX_ID_LENGTH, MAX_NESTING, MAX_URN_BYTES } from "@mdp/core";
import { ROOT, startGateway, systemClientHeaders, type Harness, type HttpBody } from "./support/gateway-harness";

const LONG = "x".repeat(3000); // past a btree index row (~2,700 bytes)
const longUrn = `urn:li:dataset:(urn:li:dataPlatform:hive,${LONG},PROD)`;

describe("HTTP input", () => {
  let h: Harness;
  const send = async (
    path: string,
    init: { method?: string; headers?: Record<string, string>; body?: Buffer | string },
  ) => {
    const res = await fetch(`${h.baseUrl}${path}`, {
      method: init.method ?? "POST",
      headers: { ...systemClientHeaders(ROOT), ...init.headers },
      body: init.body,
    });
    return { status: res.status, body: (await res.json()) as HttpBody };
  };

  beforeAll(async () => {
    h = await startGateway();
  });
  afterAll(() => h.close());

  describe(`a urn longer than ${MAX_URN_BYTES} bytes URL-encoded, or an id longer than ${MAX_ID_LENGTH}, is a 400 naming the field and the limit`, () => {
    const urnLimit = expect.stringContaining(`longer than the limit of ${MAX_URN_BYTES} bytes URL-encoded`);

    it("in a path", async () => {
      const res = await send(`/gms/entities/${encodeURIComponent(longUrn)}`, { method: "GET" });
      expect(res).toMatchObject({ status: 400, body: { code: "BAD_USER_INPUT", message: urnLimit } });
      expect(res.body.message).toContain("'urn'");
      expect(res.body.message!.length).toBeLessThan(400); // the value is not echoed whole
      const task = await send(`/gms/operations/tasks/${LONG}`, { method: "GET" });
      expect(task).toMatchObject({
        status: 400,
        body: { message: `taskId is longer than the limit of ${MAX_ID_LENGTH} characters` },
      });
    });

    it("in HTTP bodies: ingestion, evaluation, task ids", async () => {
      const ingest = await h.post("/gms/aspects?action=ingestProposal", {
        proposal: {
          entityType: "dataset",
          entityUrn: longUrn,
          aspectName: "datasetProperties",
          changeType: "UPSERT",
          aspect: { contentType: "application/json", value: "{}" },
        },
      });
      expect(ingest).toMatchObject({ status: 400, body: { message: urnLimit } });
      expect(await h.post("/gms/test?action=evaluate", { urn: longUrn })).toMatchObject({
        status: 400,
        body: { message: urnLimit },
      });
      expect(await h.post("/gms/test?action=batchEvaluate", { urns: ["urn:li:dataset:a", longUrn] })).toMatchObject({
        status: 400,
        body: { message: expect.stringContaining("'urns[1]'") },
      });
      for (const action of ["getTaskStatus", "cancelTask"]) {
        expect(await h.post(`/gms/operations?action=${action}`, { taskId: LONG })).toMatchObject({
          status: 400,
          body: { message: `taskId is longer than the limit of ${MAX_ID_LENGTH} characters` },
        });
      }
    });

    it("a refused proposal or truncation echoes no value whole, however long (any field may be most of the body)", async () => {
      const huge = "y".repeat(200_000);
      const proposal = {
        entityType: "dataset",
        entityUrn: "urn:li:dataset:(urn:li:dataPlatform:hive,t,PROD)",
        aspectName: "datasetProperties",
        changeType: "UPSERT",
        aspect: { contentType: "application/json", value: "{}" },
      };
      const refusals = await Promise.all([
        ...[
          { entityUrn: `urn:li:dataset:${huge}` },
          { entityUrn: huge },
          { changeType: huge },
          { entityType: huge },
          { aspectName: huge },
          { aspect: { contentType: huge, value: "{}" } },
        ].map((bad) => h.post("/gms/aspects?action=ingestProposal", { proposal: { ...proposal, ...bad } })),
        h.post("/gms/operations?action=truncateTimeseriesAspect", {
          entityType: huge,
          aspect: huge,
          endTimeMillis: 1,
        }),
      ]);
      for (const res of refusals) {
        expect(res.status).toBeGreaterThanOrEqual(400);
        expect(res.status).toBeLessThan(500);
        expect(res.body.message).toContain("y".repeat(50) + "…"); // abbreviated, saying so
        expect(JSON.stringify(res.body).length).toBeLessThan(1000);
      }
    });

    it("a multi-byte urn counts its encoded bytes, as DataHub does", async () => {
      // 100 characters, each 9 bytes encoded
      const res = await send(`/gms/entities/${encodeURIComponent(`urn:li:dataset:${"€".repeat(100)}`)}`, {
        method: "GET",
      });
      expect(res).toMatchObject({ status: 400, body: { message: urnLimit } });
    });

    it("in GraphQL arguments: a new test's id, a policy's users, a token id", async () => {
      const headers = systemClientHeaders(ROOT);
      const test = await h.graphql(
        `mutation($input: CreateTestInput!) { createTest(input: $input) }`,
        {
          input: {
            id: LONG,
            name: "long",
            category: "c",
            definition: { json: '{"on":{"types":["dataset"]},"rules":[]}' },
          },
        },
        headers,
      );
      expect(test.body.errors?.[0]).toMatchObject({
        message: expect.stringContaining(`longer than the limit of ${MAX_URN_BYTES} bytes URL-encoded`),
        extensions: { code: "BAD_USER_INPUT" },
      });
      const policy = await h.graphql(
        `mutation($input: PolicyUpdateInput!) { createPolicy(input: $input) }`,
        {
          input: {
            name: "long",
            state: "ACTIVE",
            privileges: ["VIEW_TESTS"],
            actors: { users: [`urn:li:corpuser:${LONG}`] },
          },
        },
        headers,
      );
      expect(policy.body.errors?.[0]).toMatchObject({
        message: expect.stringContaining("input.actors.users[0]"),
        extensions: { code: "BAD_USER_INPUT" },
      });
      const revoke = await h.graphql(
        `mutation($id: String!) { revokeAccessToken(tokenId: $id) }`,
        { id: LONG },
        headers,
      );
      expect(revoke.body.errors?.[0]).toMatchObject({
        message: `tokenId is longer than the limit of ${MAX_ID_LENGTH} characters`,
        extensions: { code: "BAD_USER_INPUT" },
      });
    });
  });

  describe("a body its Content-Encoding does not describe is a 400 naming the header; an unknown encoding a 415", () => {
    const body = Buffer.from('{"taskId":"x"}');
    it.each([["gzip"], ["deflate"], ["br"], ["GZIP"]])("%s on a body that is not", async (encoding) => {
      const res = await send("/gms/operations?action=getTaskStatus", {
        headers: { "content-type": "application/json", "content-encoding": encoding },
        body,
      });
      expect(res).toMatchObject({
        status: 400,
        body: { code: "BAD_USER_INPUT", message: expect.stringContaining(`Content-Encoding '${encoding}'`) },
      });
    });

    it("a truncated gzip body", async () => {
      const res = await send("/gms/operations?action=getTaskStatus", {
        headers: { "content-type": "application/json", "content-encoding": "gzip" },
        body: gzipSync(body).subarray(0, 12),
      });
      expect(res).toMatchObject({ status: 400, body: { message: expect.stringContaining("Content-Encoding 'gzip'") } });
    });

    it.each([["x-unknown"], ["gzip, gzip"], ["compress"]])("%s", async (encoding) => {
      const res = await send("/gms/operations?action=getTaskStatus", {
        headers: { "content-type": "application/json", "content-encoding": encoding },
        body,
      });
      expect(res).toMatchObject({
        status: 415,
        body: { code: "UNSUPPORTED_MEDIA_TYPE", message: expect.stringContaining(`Content-Encoding '${encoding}'`) },
      });
    });

    it("real gzip, deflate and br bodies are read", async () => {
      for (const [encoding, compress] of [
        ["gzip", gzipSync],
        ["deflate", deflateSync],
        ["br", brotliCompressSync],
      ] as const) {
        const res = await send("/gms/operations?action=getTaskStatus", {
          headers: { "content-type": "application/json", "content-encoding": encoding },
          body: compress(body),
        });
        expect(res).toMatchObject({ status: 404, body: { message: "Task x does not exist" } });
      }
    });
  });

  describe("an ?action= that names a member of Object.prototype is an unknown action", () => {
    it.each(Object.getOwnPropertyNames(Object.prototype).map((name) => [name]))("%s", async (action) => {
      for (const path of ["/gms/operations", "/gms/test", "/gms/aspects"]) {
        const res = await h.post(`${path}?action=${encodeURIComponent(action)}`, {});
        expect(res).toMatchObject({
          status: 400,
          body: { code: "BAD_USER_INPUT", message: expect.stringContaining(`Unknown action '${action}'`) },
        });
      }
    });
  });

  describe(`a body nesting arrays and objects past ${MAX_NESTING} levels is a 400 naming the limit`, () => {
    const deep = (levels: number) => `{"taskId":${"[".repeat(levels)}${"]".repeat(levels)}}`;
    const limitMessage = `Request body nests arrays and objects deeper than the limit of ${MAX_NESTING} levels.`;

    it("plain, compressed, or on GraphQL", async () => {
      const plain = await send("/gms/operations?action=getTaskStatus", {
        headers: { "content-type": "application/json" },
        body: deep(200_000),
      });
      expect(plain).toMatchObject({ status: 400, body: { code: "BAD_USER_INPUT", message: limitMessage } });
      const gzipped = await send("/gms/operations?action=getTaskStatus", {
        headers: { "content-type": "application/json", "content-encoding": "gzip" },
        body: gzipSync(deep(400_000)),
      });
      expect(gzipped).toMatchObject({ status: 400, body: { message: limitMessage } });
      const graphql = await send("/api/graphql", {
        headers: { "content-type": "application/json" },
        body: `{"query":"{ me { urn } }","variables":{"x":${"[".repeat(5000)}${"]".repeat(5000)}}}`,
      });
      expect(graphql.status).toBe(400);
      expect(JSON.stringify(graphql.body)).toContain(limitMessage);
    });

    it("brackets inside strings do not count, and the limit itself is accepted", async () => {
      const inString = await send("/gms/operations?action=getTaskStatus", {
        headers: { "content-type": "application/json" },
        body: `{"taskId":"${"[{".repeat(120)}"}${" ".repeat(2000)}`,
      });
      expect(inString).toMatchObject({ status: 404, body: { code: "NOT_FOUND" } });
      const atLimit = await send("/gms/operations?action=getTaskStatus", {
        headers: { "content-type": "application/json" },
        body: deep(MAX_NESTING - 1),
      });
      expect(atLimit.body.message).not.toBe(limitMessage);
    });
  });
});
