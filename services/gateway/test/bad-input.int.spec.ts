/**
 * Input PostgreSQL cannot store or the router cannot read, and GraphQL's own errors: each is the caller's error (400 /
 * BAD_USER_INPUT, one of docs/api.md's codes) naming what was wrong, never a 500.
 */
import { ROOT, startGateway, systemClientHeaders, type Harness } from "./support/gateway-harness";

const DATASET = "urn:li:dataset:(urn:li:dataPlatform:hive,db.orders,PROD)";

describe("bad input", () => {
  let h: Harness;
  const get = async (path: string) => {
    const res = await fetch(`${h.baseUrl}${path}`, { headers: systemClientHeaders(ROOT) });
    return { status: res.status, body: (await res.json()) as { code?: string; message?: string } };
  };

  beforeAll(async () => {
    h = await startGateway();
  });
  afterAll(() => h.close());

  describe("a NUL character (U+0000), which PostgreSQL cannot store, is refused naming where it is", () => {
    it("in an HTTP body", async () => {
      const res = await h.post("/gms/operations?action=getTaskStatus", { taskId: "a\u0000" });
      expect(res).toMatchObject({
        status: 400,
        body: { code: "BAD_USER_INPUT", message: "taskId contains the character U+0000 (NUL), which cannot be stored" },
      });
    });

    it("in a path parameter", async () => {
      expect(await get("/gms/operations/tasks/a%00")).toMatchObject({
        status: 400,
        body: { message: "taskId contains the character U+0000 (NUL), which cannot be stored" },
      });
      const entity = await get(`/gms/entities/${encodeURIComponent("urn:li:dataset:a\u0000b")}`);
      expect(entity.status).toBe(400);
      expect(entity.body.message).toContain("(contains a control character)");
    });

    it("inside an aspect value, which travels as JSON text", async () => {
      const res = await h.post("/gms/aspects?action=ingestProposal", {
        proposal: {
          entityType: "dataset",
          entityUrn: DATASET,
          aspectName: "datasetProperties",
          changeType: "UPSERT",
          aspect: { contentType: "application/json", value: JSON.stringify({ description: "a\u0000b" }) },
        },
      });
      expect(res).toMatchObject({
        status: 400,
        body: {
          message: "proposal.aspect.value.description contains the character U+0000 (NUL), which cannot be stored",
        },
      });
    });

    it("in an urn to evaluate, before it can reach a batch shared with other callers' requests", async () => {
      const res = await h.post("/gms/test?action=evaluate", { urn: "urn:li:dataset:a\u0000b" });
      expect(res).toMatchObject({
        status: 400,
        body: { message: expect.stringContaining("urn contains the character") },
      });
    });

    it("in a GraphQL argument", async () => {
      const res = await h.graphql(
        `mutation($input: GetAccessTokenInput!) { createAccessToken(input: $input) { accessToken } }`,
        { input: { type: "PERSONAL", actorUrn: ROOT, duration: "ONE_HOUR", name: "a\u0000b" } },
        systemClientHeaders(ROOT),
      );
      expect(res.body.errors?.[0]).toMatchObject({
        message: "input.name contains the character U+0000 (NUL), which cannot be stored",
        extensions: { code: "BAD_USER_INPUT" },
      });
    });
  });

  describe("an unpaired UTF-16 surrogate, which is no Unicode character and cannot be stored, is refused naming where", () => {
    const proposal = (value: string, aspectName = "datasetProperties") => ({
      proposal: {
        entityType: "dataset",
        entityUrn: DATASET,
        aspectName,
        changeType: "UPSERT",
        aspect: { contentType: "application/json", value },
      },
    });

    it("escaped inside an aspect value, versioned or time series", async () => {
      const versioned = await h.post("/gms/aspects?action=ingestProposal", proposal('{"description":"x\\ud800y"}'));
      expect(versioned).toMatchObject({
        status: 400,
        body: {
          message:
            "proposal.aspect.value.description contains an unpaired surrogate U+D800 (not a Unicode character), which cannot be stored",
        },
      });
      const timeseries = await h.post(
        "/gms/aspects?action=ingestProposal",
        proposal('{"timestampMillis":1700000000000,"note":"\\udc00"}', "datasetProfile"),
      );
      expect(timeseries).toMatchObject({ status: 400, body: { message: expect.stringContaining("U+DC00") } });
    });

    it("as it is, in an HTTP body: an urn to evaluate", async () => {
      const res = await h.post("/gms/test?action=evaluate", { urn: "urn:li:dataset:x\ud800" });
      expect(res).toMatchObject({
        status: 400,
        body: { message: expect.stringContaining("urn contains an unpaired") },
      });
    });

    it("escaped inside a test definition, as a definition error saying where", async () => {
      const res = await h.graphql(
        `mutation($input: CreateTestInput!) { createTest(input: $input) }`,
        {
          input: {
            id: "surrogate",
            name: "surrogate",
            category: "x",
            definition: {
              json: '{"on":{"types":["dataset"]},"rules":{"property":"urn","operator":"equals","value":"\\ud800"}}',
            },
          },
        },
        systemClientHeaders(ROOT),
      );
      expect(res.body.errors?.[0]).toMatchObject({
        message: expect.stringMatching(/^Failed to validate test definition: .*unpaired surrogate U\+D800/),
        extensions: { code: "BAD_USER_INPUT" },
      });
    });
  });

  it("answers 400 for a path that is not validly percent-encoded", async () => {
    expect(await get("/gms/entities/urn%3Ali%3Adataset%3A%E0%A4%A")).toMatchObject({
      status: 400,
      body: { code: "BAD_USER_INPUT", message: "The request path is not validly percent-encoded." },
    });
  });

  it("needs no content type for an action sent without a body", async () => {
    const res = await fetch(`${h.baseUrl}/gms/operations?action=getIndexSizes`, {
      method: "POST",
      headers: systemClientHeaders(ROOT),
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ value: { indexSizes: [] } });
  });

  describe("GraphQL", () => {
    const asRoot = systemClientHeaders(ROOT);

    it("names the argument of an invalid inline value, as BAD_USER_INPUT", async () => {
      const res = await h.graphql(
        `mutation { createAccessToken(input: {type: PERSONAL, actorUrn: "${ROOT}", duration: TWO_HOURS, name: "x"}) { accessToken } }`,
        {},
        asRoot,
      );
      expect(res.status).toBe(200); // a validation error, as application/json: errors[] with 200 (GraphQL over HTTP)
      expect(res.body.errors?.[0]).toMatchObject({
        message: expect.stringMatching(/^createAccessToken\(input\.duration\): Value "TWO_HOURS" does not exist/),
        extensions: { code: "BAD_USER_INPUT" },
      });
    });

    it("answers a syntax error with BAD_USER_INPUT", async () => {
      const res = await h.graphql(`{ me { urn `, {}, asRoot);
      expect(res.body.errors?.[0]).toMatchObject({
        message: expect.stringContaining("Syntax Error"),
        extensions: { code: "BAD_USER_INPUT" },
      });
    });

    it("is served over POST only: a query in a URL would carry what it holds into access logs", async () => {
      const res = await fetch(`${h.baseUrl}/api/graphql?query=${encodeURIComponent("{ me { urn } }")}`, {
        headers: { ...asRoot, "apollo-require-preflight": "1" },
      });
      expect(res.status).toBe(405);
      expect(res.headers.get("allow")).toBe("POST");
      expect(await res.json()).toEqual({
        errors: [
          {
            message: "GraphQL is served over POST only.",
            extensions: { code: "BAD_USER_INPUT", type: "BAD_REQUEST", datahubCode: 400 },
          },
        ],
      });
    });

    it.each(["application/x-www-form-urlencoded", "text/plain", undefined])(
      "answers a body sent as %s with 415 saying it must be JSON, not with Apollo's CSRF refusal",
      async (type) => {
        const res = await fetch(`${h.baseUrl}/api/graphql`, {
          method: "POST",
          headers: { ...asRoot, "content-type": type ?? "" },
          body: JSON.stringify({ query: "{ me { urn } }" }),
        });
        expect(res.status).toBe(415);
        expect(await res.json()).toEqual({
          errors: [
            {
              message: "Content-Type must be application/json.",
              extensions: { code: "BAD_USER_INPUT", type: "BAD_REQUEST", datahubCode: 400 },
            },
          ],
        });
      },
    );

    it("answers in GraphQL's shape under its path with a trailing slash too", async () => {
      const res = await fetch(`${h.baseUrl}/api/graphql/`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ query: "{ me { urn } }" }),
      });
      expect(res.status).toBe(401);
      expect(await res.json()).toEqual({
        errors: [{ message: "Request is missing 'Authorization' header.", extensions: { code: "UNAUTHENTICATED" } }],
      });
    });

    it("refuses a malformed group or policy urn as BAD_USER_INPUT naming the field, not as unknown", async () => {
      const members = await h.graphql(
        `mutation { addGroupMembers(input: {groupUrn: "garbage", userUrns: ["urn:li:corpuser:bob"]}) }`,
        {},
        asRoot,
      );
      expect(members.body.errors?.[0]).toMatchObject({
        message: "Invalid urn in 'input.groupUrn': 'garbage' (must start with 'urn:')",
        extensions: { code: "BAD_USER_INPUT" },
      });
      const policy = await h.graphql(`{ policy(urn: "garbage") { name } }`, {}, asRoot);
      expect(policy.body.errors?.[0]).toMatchObject({ extensions: { code: "BAD_USER_INPUT" } });
      expect(policy.body.errors?.[0]?.message).toContain("Invalid urn in 'urn'");
    });

    it("refuses a group description longer than the 2,000 characters stored, naming it", async () => {
      const res = await h.graphql(
        `mutation($d: String) { createGroup(input: {name: "G", description: $d}) }`,
        { d: "x".repeat(2001) },
        asRoot,
      );
      expect(res.body.errors?.[0]).toMatchObject({
        message: "input.description must be at most 2000 characters long",
        extensions: { code: "BAD_USER_INPUT" },
      });
    });
  });
});
