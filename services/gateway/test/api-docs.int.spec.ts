/**
 * The API's descriptions against the real gateway: the checked-in OpenAPI document and GraphQL SDL are what it serves
 * (a change to an action or the schema without `pnpm api:write` fails here), every operation's example is accepted as
 * Swagger UI prefills it, and the viewer and explorer pages are behind the same authentication as everything else,
 * with a login prompt for browsers. What the pages do in a browser: browser-pages.int.spec.ts.
 */
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { buildClientSchema, getIntrospectionQuery, type IntrospectionQuery } from "graphql";
import { ERROR_CODES } from "@mdp/core";
import { apiFiles, GRAPHQL_SDL_FILE, OPENAPI_FILE, WRITE_COMMAND } from "../src/api-docs/api-files";
import { printSdl } from "../src/api-docs/graphql-sdl";
import { EXAMPLE_TASK_ID } from "../src/api-docs/request-examples";
import { startEvaluationWorker } from "./support/evaluation-worker";
import { ROOT, bearer, createToken, startGateway, systemClientHeaders, type Harness } from "./support/gateway-harness";

const REPO = resolve(__dirname, "../../..");
const checkedIn = (file: string) => readFileSync(resolve(REPO, file), "utf8");
const basic = (token: string) => ({ authorization: `Basic ${Buffer.from(`anyone:${token}`).toString("base64")}` });
const html = { accept: "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8" };

/** Fails naming the file and the command that rewrites it. */
function expectUpToDate(file: string, actual: unknown, expected: unknown): void {
  try {
    expect(actual).toEqual(expected);
  } catch (error) {
    throw new Error(
      `${file} differs from what the gateway serves: run \`${WRITE_COMMAND}\` and commit it.\n${String(error)}`,
    );
  }
}

describe("API descriptions", () => {
  let h: Harness;
  let token: string;

  beforeAll(async () => {
    h = await startGateway();
    token = (await createToken(h, ROOT)).token;
  });
  afterAll(() => h.close());

  describe("checked in", () => {
    it(`${OPENAPI_FILE} is the document the gateway serves`, async () => {
      const res = await fetch(`${h.baseUrl}/openapi.json`, { headers: bearer(token) });
      expect(res.status).toBe(200);
      const served: unknown = await res.json();
      expectUpToDate(OPENAPI_FILE, JSON.parse(checkedIn(OPENAPI_FILE)), served);
      // what `pnpm api:write` writes is the served document too, so running it fixes a failure above
      expectUpToDate(OPENAPI_FILE, JSON.parse((await apiFiles())[OPENAPI_FILE]!), served);
    });

    it(`${GRAPHQL_SDL_FILE} is the schema the gateway serves`, async () => {
      const res = await h.graphql(getIntrospectionQuery(), {}, systemClientHeaders(ROOT));
      const served = printSdl(buildClientSchema(res.body.data as unknown as IntrospectionQuery));
      expectUpToDate(GRAPHQL_SDL_FILE, checkedIn(GRAPHQL_SDL_FILE), served);
      expectUpToDate(GRAPHQL_SDL_FILE, (await apiFiles())[GRAPHQL_SDL_FILE], served);
    });

    it("describes every action each path accepts, under both gms bases", async () => {
      const doc = (await (await fetch(`${h.baseUrl}/gms/openapi.json`, { headers: bearer(token) })).json()) as {
        servers: Array<{ url: string }>;
        paths: Record<string, { post?: { requestBody?: unknown } }>;
      };
      expect(doc.servers.map((s) => s.url)).toEqual(["/gms", "/api/gms"]);
      for (const path of ["/aspects", "/operations", "/test"]) {
        // the gateway's own list of valid actions, from its 400
        const refused = await h.post(`/gms${path}?action=none`, {});
        const names = /valid actions: (.*)$/.exec(refused.body.message!)![1]!.split(", ");
        for (const name of names) expect(doc.paths[`${path}?action=${name}`]?.post?.requestBody).toBeDefined();
      }
      expect(Object.keys(doc.paths)).toEqual(
        expect.arrayContaining(["/entities/{urn}", "/operations/tasks/{taskId}", "/health", "/ready", "/metrics"]),
      );
    });

    it("documents a request body as the schema that refuses it", async () => {
      const doc = (await (await fetch(`${h.baseUrl}/openapi.json`, { headers: bearer(token) })).json()) as {
        paths: Record<string, { post: { requestBody: { content: Record<string, { schema: unknown }> } } }>;
      };
      const schema = doc.paths["/operations?action=truncateTimeseriesAspect"]!.post.requestBody.content[
        "application/json"
      ]!.schema as { properties: Record<string, unknown>; required: string[]; additionalProperties: boolean };
      expect(schema.required.sort()).toEqual(["aspect", "endTimeMillis", "entityType"]);
      expect(schema.additionalProperties).toBe(false);
      expect(schema.properties.batchSize).toMatchObject({ minimum: 1, maximum: 1_000_000, default: 10_000 });
      const refused = await h.post("/gms/operations?action=truncateTimeseriesAspect", {
        entityType: "dataset",
        aspect: "datasetProfile",
        endTimeMillis: 1,
        batchSize: 1_000_001,
      });
      expect(refused.status).toBe(400);
      expect(refused.body.message).toContain("batchSize");
    });
  });

  describe("examples, as Swagger UI's Try it out sends them", () => {
    interface Operation {
      operationId: string;
      parameters?: Array<{ name: string; example?: unknown }>;
      requestBody?: { content: { "application/json": { example?: unknown } } };
      responses: Record<string, { $ref?: string }>;
    }
    interface Document {
      jsonSchemaDialect?: string;
      paths: Record<string, Record<string, Operation>>;
      components: {
        responses: Record<string, { content: { "application/json": { example?: Record<string, unknown> } } }>;
      };
    }
    const served = async () =>
      (await (await fetch(`${h.baseUrl}/openapi.json`, { headers: bearer(token) })).json()) as Document;

    it("declares no dialect Swagger UI warns about (it supports OpenAPI 3.1's default only)", async () => {
      expect((await served()).jsonSchemaDialect).toBeUndefined();
    });

    it("gets each operation's documented success for its example, sent as prefilled, in document order", async () => {
      const doc = await served();
      const worker = await startEvaluationWorker(h, 2, { threads: 1 });
      try {
        // A task id is the one thing a fresh system cannot hold: the examples naming one name this task instead.
        const truncation = await h.post("/gms/operations?action=truncateTimeseriesAspect", {
          entityType: "dataset",
          aspect: "datasetProfile",
          endTimeMillis: 1,
          dryRun: false,
        });
        const taskId = truncation.body.value as string;
        const unknownTask = await h.post("/gms/operations?action=getTaskStatus", { taskId: EXAMPLE_TASK_ID });
        expect(unknownTask.status).toBe(404);
        const withTask = (text: string) => text.replaceAll(EXAMPLE_TASK_ID, taskId);
        const answers: Array<{ operation: string; status: number; body: unknown }> = [];
        for (const [path, item] of Object.entries(doc.paths)) {
          for (const [method, op] of Object.entries(item)) {
            if (method === "servers" || ["/health", "/ready", "/metrics"].includes(path)) continue;
            let url = `/gms${path}`;
            for (const param of op.parameters ?? []) {
              expect({ operation: op.operationId, param: param.name, example: param.example }).toEqual({
                operation: op.operationId,
                param: param.name,
                example: expect.any(String),
              });
              url = url.replace(`{${param.name}}`, encodeURIComponent(withTask(param.example as string)));
            }
            const example = op.requestBody?.content["application/json"].example;
            if (method === "post")
              expect({ operation: op.operationId, example }).not.toEqual({
                operation: op.operationId,
                example: undefined,
              });
            const res = await fetch(`${h.baseUrl}${url}`, {
              method: method.toUpperCase(),
              headers: { "content-type": "application/json", ...bearer(token) },
              ...(method === "post" ? { body: withTask(JSON.stringify(example)) } : {}),
            });
            answers.push({ operation: op.operationId, status: res.status, body: await res.json() });
          }
        }
        expect(answers.length).toBeGreaterThanOrEqual(13);
        for (const answer of answers) {
          expect({ ...answer, body: answer.status === 200 ? "ok" : answer.body }).toEqual({
            ...answer,
            status: 200,
            body: "ok",
          });
        }
      } finally {
        await worker.close();
      }
    });

    it("documents each error response with an example of its own status and code", async () => {
      const doc = await served();
      const named = new Map<string, string>(); // component name → the status it is documented under
      for (const item of Object.values(doc.paths)) {
        for (const op of Object.values(item)) {
          for (const [status, response] of Object.entries(op.responses ?? {})) {
            if (response.$ref) named.set(response.$ref.split("/").pop()!, status);
          }
        }
      }
      expect(named.size).toBe(Object.keys(doc.components.responses).length);
      for (const [name, status] of named) {
        const example = doc.components.responses[name]!.content["application/json"].example!;
        expect({ name, status: example.status, message: typeof example.message }).toEqual({
          name,
          status: Number(status),
          message: "string",
        });
        expect(ERROR_CODES[example.code as keyof typeof ERROR_CODES].status).toBe(Number(status));
      }
      expect(new Set([...named.values()]).size).toBe(named.size);
    });
  });

  describe("authentication", () => {
    it.each(["/openapi.json", "/gms/openapi.json", "/api-docs/", "/api-docs/swagger-ui-bundle.js"])(
      "%s is 401 without credentials",
      async (path) => {
        const res = await fetch(`${h.baseUrl}${path}`);
        expect(res.status).toBe(401);
      },
    );

    it("asks a browser for credentials on the pages, and an API client gets a plain 401", async () => {
      for (const path of ["/api-docs/", "/api/graphql", "/graphql-explorer/explorer.js"]) {
        const res = await fetch(`${h.baseUrl}${path}`, { headers: html });
        expect(res.status).toBe(401);
        expect(res.headers.get("www-authenticate")).toMatch(/^Basic realm=/);
      }
      const api = await fetch(`${h.baseUrl}/openapi.json`);
      expect(api.headers.get("www-authenticate")).toBeNull();
      const graphql = await fetch(`${h.baseUrl}/api/graphql`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ query: "{ me { urn } }" }),
      });
      expect(graphql.status).toBe(401);
      expect(graphql.headers.get("www-authenticate")).toBeNull();
    });

    it("tells a browser whose password is not an access token that it must be one", async () => {
      const res = await fetch(`${h.baseUrl}/api-docs/`, { headers: basic("hunter2") });
      expect(res.status).toBe(401);
      expect(((await res.json()) as { message: string }).message).toBe(
        "The API reference's password must be an access token (any user name); this one is not.",
      );
    });
  });

  describe("the OpenAPI viewer", () => {
    it("serves Swagger UI from the installed package, reading the gateway's document", async () => {
      const redirect = await fetch(`${h.baseUrl}/api-docs`, { headers: basic(token), redirect: "manual" });
      expect(redirect.status).toBe(301);
      expect(redirect.headers.get("location")).toBe("/api-docs/");
      const page = await fetch(`${h.baseUrl}/api-docs/`, { headers: basic(token) });
      expect(page.status).toBe(200);
      expect(await page.text()).toContain('<div id="swagger-ui">');
      // the gateway's own Content-Security-Policy: no inline script, nothing from another origin
      expect(page.headers.get("content-security-policy")).toContain("script-src 'self';");
      for (const asset of ["swagger-ui-bundle.js", "swagger-ui-standalone-preset.js", "swagger-ui.css"]) {
        const res = await fetch(`${h.baseUrl}/api-docs/${asset}`, { headers: basic(token) });
        expect({ asset, status: res.status }).toEqual({ asset, status: 200 });
        expect((await res.arrayBuffer()).byteLength).toBeGreaterThan(1000);
      }
      const init = await (
        await fetch(`${h.baseUrl}/api-docs/swagger-initializer.js`, { headers: basic(token) })
      ).text();
      expect(init).toContain('url: "openapi.json"');
      const doc = await fetch(`${h.baseUrl}/api-docs/openapi.json`, { headers: basic(token) });
      expect(((await doc.json()) as { openapi: string }).openapi).toBe("3.1.1");
    });

    it("serves nothing else of the package", async () => {
      const res = await fetch(`${h.baseUrl}/api-docs/package.json`, { headers: basic(token) });
      expect(res.status).toBe(404);
    });
  });

  describe("the GraphQL explorer", () => {
    it("is GraphiQL on a browser's GET, every file of it served by the gateway under its own policy", async () => {
      const res = await fetch(`${h.baseUrl}/api/graphql`, { headers: { ...html, ...basic(token) } });
      expect(res.status).toBe(200);
      const page = await res.text();
      expect(page).toContain('<div id="graphiql">');
      // nothing from another origin, nothing inline: the gateway's Content-Security-Policy unchanged
      expect(page).not.toMatch(/(src|href)="(https?:)?\/\//);
      expect(page).not.toMatch(/<script>|<style>/);
      expect(res.headers.get("content-security-policy")).toContain("script-src 'self';");
      const assets = [...page.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]!);
      expect(assets).toHaveLength(2);
      for (const asset of assets) {
        const file = await fetch(`${h.baseUrl}${asset}`, { headers: basic(token) });
        expect({ asset, status: file.status }).toEqual({ asset, status: 200 });
        expect(file.headers.get("content-type")).toMatch(/^(text\/css|(text|application)\/javascript)/);
        // without credentials, the same 401 as every route
        expect((await fetch(`${h.baseUrl}${asset}`)).status).toBe(401);
      }
    });

    it("accepts the browser's login on the requests the page sends, and runs no query sent by GET", async () => {
      const res = await fetch(`${h.baseUrl}/api/graphql`, {
        method: "POST",
        headers: { "content-type": "application/json", ...basic(token) },
        body: JSON.stringify({ query: "{ me { urn } }" }),
      });
      expect(await res.json()).toEqual({ data: { me: { urn: ROOT } } });
      const get = await fetch(`${h.baseUrl}/api/graphql?query=${encodeURIComponent("{ me { urn } }")}`, {
        headers: { accept: "application/json", ...basic(token) },
      });
      expect(get.status).toBe(405);
    });

    it("is off with GRAPHQL_EXPLORER=false: a browser's GET gets the API's 405, and its files are not served", async () => {
      const off = await startGateway({ GRAPHQL_EXPLORER: "false" });
      try {
        const offToken = (await createToken(off, ROOT)).token;
        const res = await fetch(`${off.baseUrl}/api/graphql`, { headers: { ...html, ...basic(offToken) } });
        expect(res.status).toBe(405);
        expect(res.headers.get("allow")).toBe("POST");
        expect(await res.text()).not.toContain("graphiql");
        const asset = await fetch(`${off.baseUrl}/graphql-explorer/explorer.js`, { headers: basic(offToken) });
        expect(asset.status).toBe(404);
      } finally {
        await off.close();
      }
    });
  });
});
