import { ERROR_CODES, type ErrorCode } from "@mdp/core";
import { z } from "zod";
import type { ApiRoute } from "../http/action-router";

/**
 * The OpenAPI 3.1 document of the HTTP API, generated from the routes as they were added (action-router.ts): the same
 * zod schemas that parse the requests become the request bodies (zod's JSON Schema is draft 2020-12, OpenAPI 3.1's
 * dialect), so the document cannot drift from what the gateway accepts. Checked in as docs/api/openapi.json
 * (`pnpm api:write`), served at /openapi.json.
 */

/** JSON Schema of what a client sends: defaults make fields optional, transforms are not the client's concern. */
const inputSchema = (schema: z.ZodType) => strip(z.toJSONSchema(schema, { io: "input", target: "draft-2020-12" }));
const outputSchema = (schema: z.ZodType) => strip(z.toJSONSchema(schema, { io: "output", target: "draft-2020-12" }));

/** The document's own dialect is declared once (jsonSchemaDialect), not in every schema. */
function strip(schema: Record<string, unknown>): Record<string, unknown> {
  const { $schema: _, ...rest } = schema;
  return rest;
}

const errorBody = {
  type: "object",
  required: ["status", "code", "message"],
  properties: {
    status: { type: "integer", description: "the HTTP status, repeated" },
    code: {
      type: "string",
      enum: Object.keys(ERROR_CODES),
      description: `one per kind of error, with its HTTP status: ${Object.entries(ERROR_CODES)
        .map(([code, { status }]) => `${code} ${status}`)
        .join(", ")}`,
    },
    message: { type: "string", description: "for people: names the field and the limit of a refused input" },
    details: {
      type: "object",
      description: "e.g. `problems` (every invalid field of a 400), `retryAfterSeconds` (429, 503)",
    },
  },
};

const ref = (name: string) => ({ $ref: `#/components/responses/${name}` });

/**
 * The error answers the document names, each under its code's status in the error table (libs/core errors.ts): a
 * code's status changes there, and here with it.
 */
const ERROR_RESPONSES = {
  BadRequest: ["BAD_USER_INPUT", "the message names every invalid field and its limit"],
  Unauthenticated: ["UNAUTHENTICATED", "no, or invalid, credentials"],
  Forbidden: ["FORBIDDEN", "`<actor> is unauthorized to <operation>.`"],
  NotFound: ["NOT_FOUND", "what the request names does not exist"],
  UnsupportedMediaType: ["UNSUPPORTED_MEDIA_TYPE", "a body that is not application/json"],
  TooManyRequests: ["TOO_MANY_REQUESTS", "a per-user rate limit; Retry-After says when to retry"],
  Unavailable: ["SERVICE_UNAVAILABLE", "PostgreSQL or Redis is unavailable; Retry-After"],
} as const satisfies Record<string, readonly [ErrorCode, string]>;

type ErrorResponseName = keyof typeof ERROR_RESPONSES;

/** `{ "<status>": $ref }` for the named error responses, the status read from the error table. */
const errorRefs = (...names: ErrorResponseName[]) =>
  Object.fromEntries(names.map((name) => [String(ERROR_CODES[ERROR_RESPONSES[name][0]].status), ref(name)]));

/** The errors every authenticated route may answer; each route adds its own 2xx. */
const commonErrors = errorRefs("BadRequest", "Unauthenticated", "Forbidden", "TooManyRequests", "Unavailable");

const errorResponse = (description: string) => ({
  description,
  content: { "application/json": { schema: { $ref: "#/components/schemas/Error" } } },
});

function privilegeText(route: ApiRoute): string {
  const { requires, privilegeNote } = route.spec;
  const needs = requires ? `Needs \`${requires.privilege}\`.` : "";
  return [needs, privilegeNote].filter(Boolean).join(" ");
}

function answer(route: ApiRoute) {
  const value = route.spec.response ? outputSchema(route.spec.response) : {};
  return {
    description: "`value` holds the answer",
    content: {
      "application/json": { schema: { type: "object", required: ["value"], properties: { value: value } } },
    },
  };
}

/** `/operations/tasks/:taskId` → `getOperationsTasksTaskId` */
const getOperationId = (path: string) =>
  `get${path
    .split(/[^A-Za-z0-9]+/)
    .map((word) => word.charAt(0).toUpperCase() + word.slice(1))
    .join("")}`;

/** express `/a/:b` → OpenAPI `/a/{b}` */
const templated = (path: string) => path.replace(/:(\w+)/g, "{$1}");

function operation(route: ApiRoute) {
  const description = [route.spec.description, privilegeText(route)].filter(Boolean).join("\n\n");
  const common = {
    summary: route.spec.summary,
    ...(description ? { description } : {}),
    ...(route.spec.requires ? { "x-privilege": route.spec.requires.privilege } : {}),
  };
  if (route.kind === "get") {
    const params = inputSchema(route.spec.request) as { properties?: Record<string, unknown> };
    return {
      operationId: getOperationId(route.path),
      ...common,
      parameters: Object.entries(params.properties ?? {}).map(([name, schema]) => ({
        name,
        in: "path",
        required: true,
        schema,
      })),
      responses: { "200": answer(route), ...commonErrors, ...errorRefs("NotFound") },
    };
  }
  const body = inputSchema(route.spec.request);
  const optional = route.spec.request.safeParse({}).success;
  return {
    operationId: route.name,
    ...common,
    requestBody: { required: !optional, content: { "application/json": { schema: body } } },
    responses: { "200": answer(route), ...commonErrors, ...errorRefs("NotFound", "UnsupportedMediaType") },
  };
}

/** The probes: no credentials, as docs/limits.md and the README document them. */
const unauthenticatedPaths = {
  "/health": {
    get: {
      operationId: "health",
      summary: "Liveness: the process answers",
      security: [],
      responses: { "200": { description: '`{"status":"ok"}`' } },
    },
  },
  "/ready": {
    get: {
      operationId: "ready",
      summary: "Readiness: PostgreSQL and Redis answer",
      security: [],
      responses: {
        "200": { description: "every check ok" },
        "503": { description: "a check failed; the body says which" },
      },
    },
  },
  "/metrics": {
    get: {
      operationId: "metrics",
      summary: "Prometheus metrics of this gateway",
      security: [],
      responses: { "200": { description: "Prometheus text exposition format", content: { "text/plain": {} } } },
    },
  },
};

export type OpenApiDocument = Record<string, unknown> & { paths: Record<string, unknown> };

/**
 * Paths are relative to the servers (`/gms`, `/api/gms`: both answer alike). Each action is a path of its own,
 * `/<path>?action=<name>` (OpenAPI has one operation per method and path, and Rest.li names its actions in the query).
 */
export function openApiDocument(routes: readonly ApiRoute[], gmsBases: readonly string[]): OpenApiDocument {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of routes) {
    const key = route.kind === "action" ? `${route.path}?action=${route.name}` : templated(route.path);
    paths[key] = { ...paths[key], [route.kind === "action" ? "post" : "get"]: operation(route) };
  }
  const root = [{ url: "/", description: "the gateway's root" }];
  return {
    openapi: "3.1.1",
    jsonSchemaDialect: "https://json-schema.org/draft/2020-12/schema",
    info: {
      title: "Metadata platform administration API",
      version: "1",
      description:
        'The HTTP operations of the gateway. Every answer is `{"value": ...}`; every error `{status, code, message}`. ' +
        "GraphQL (tokens, policies, tests, tasks) is described by docs/api/schema.graphql. The reference: docs/api.md.",
    },
    servers: gmsBases.map((url) => ({ url })),
    security: [{ bearerAuth: [] }, { systemClient: [], actorHeader: [] }],
    paths: {
      ...paths,
      ...Object.fromEntries(Object.entries(unauthenticatedPaths).map(([p, item]) => [p, { servers: root, ...item }])),
    },
    components: {
      securitySchemes: {
        bearerAuth: { type: "http", scheme: "bearer", bearerFormat: "JWT", description: "a personal access token" },
        systemClient: {
          type: "http",
          scheme: "basic",
          description: "the trusted system client (SYSTEM_CLIENT_ID:SYSTEM_CLIENT_SECRET), with X-Platform-Actor",
        },
        actorHeader: {
          type: "apiKey",
          in: "header",
          name: "X-Platform-Actor",
          description: "the corpuser urn the system client acts for",
        },
      },
      schemas: { Error: errorBody },
      responses: Object.fromEntries(
        Object.entries(ERROR_RESPONSES).map(([name, [code, description]]) => [
          name,
          errorResponse(`${code}: ${description}`),
        ]),
      ),
    },
  };
}
