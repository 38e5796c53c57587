import { ERROR_CODES, type ErrorCode } from "@mdp/core";
import { z } from "zod";
import type { ApiRoute } from "../http/action-router";
import { PARAMETER_EXAMPLES, REQUEST_EXAMPLES } from "./request-examples";

/**
 * The OpenAPI 3.1 document of the HTTP API, generated from the routes as they were added (action-router.ts): the same
 * zod schemas that parse the requests become the request bodies (zod's JSON Schema is draft 2020-12, which OpenAPI
 * 3.1's default dialect extends), so the document cannot drift from what the gateway accepts. Checked in as
 * docs/api/openapi.json (`pnpm api:write`), served at /openapi.json. Every operation carries an example request that
 * its route accepts (request-examples.ts), and every error response an example with its own status and code: without
 * them Swagger UI makes bodies up from the schemas (`"string"`, `true`, `{"status": 0, "code": "BAD_USER_INPUT"}`).
 */

/** JSON Schema of what a client sends: defaults make fields optional, transforms are not the client's concern. */
const inputSchema = (schema: z.ZodType) => strip(z.toJSONSchema(schema, { io: "input", target: "draft-2020-12" }));
const outputSchema = (schema: z.ZodType) => strip(z.toJSONSchema(schema, { io: "output", target: "draft-2020-12" }));

/**
 * No `$schema` in each schema: OpenAPI 3.1's default dialect holds draft 2020-12. Nor a `jsonSchemaDialect` naming
 * draft 2020-12 itself: Swagger UI 5 supports only the default, and opens under a red warning for any other.
 */
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
 * code's status changes there, and here with it. Each with the body a caller meets, as its example.
 */
const ERROR_RESPONSES = {
  BadRequest: {
    code: "BAD_USER_INPUT",
    description: "the message names every invalid field and its limit",
    message: "Invalid request: batchSize: must be a whole number from 1 to 1000000",
    details: { problems: ["batchSize: must be a whole number from 1 to 1000000"] },
  },
  Unauthenticated: {
    code: "UNAUTHENTICATED",
    description: "no, or invalid, credentials",
    message: "Request is missing 'Authorization' header.",
  },
  Forbidden: {
    code: "FORBIDDEN",
    description: "`<actor> is unauthorized to <operation>.`",
    message: "urn:li:corpuser:jdoe is unauthorized to truncate time-series indexes.",
  },
  NotFound: {
    code: "NOT_FOUND",
    description: "what the request names does not exist",
    message: "Task df0c8103-5c1e-4b8a-9a53-2f0d6c1e7b42 does not exist",
  },
  UnsupportedMediaType: {
    code: "UNSUPPORTED_MEDIA_TYPE",
    description: "a body that is not application/json",
    message: "Content-Type must be application/json.",
  },
  TooManyRequests: {
    code: "TOO_MANY_REQUESTS",
    description: "a per-user rate limit; Retry-After says when to retry",
    message:
      "Rate limit exceeded: at most 1200 metadata-test entity evaluations per minute per actor " +
      "(RATE_LIMIT_EVALUATIONS_PER_MINUTE); retry in 7 s.",
    details: { limit: "RATE_LIMIT_EVALUATIONS_PER_MINUTE", perMinute: 1200, retryAfterSeconds: 7 },
  },
  Unavailable: {
    code: "SERVICE_UNAVAILABLE",
    description: "PostgreSQL or Redis is unavailable; Retry-After",
    message: "PostgreSQL is unavailable; retry shortly.",
    details: { retryAfterSeconds: 2 },
  },
} as const satisfies Record<
  string,
  { code: ErrorCode; description: string; message: string; details?: Record<string, unknown> }
>;

type ErrorResponseName = keyof typeof ERROR_RESPONSES;

/** `{ "<status>": $ref }` for the named error responses, the status read from the error table. */
const errorRefs = (...names: ErrorResponseName[]) =>
  Object.fromEntries(names.map((name) => [String(ERROR_CODES[ERROR_RESPONSES[name].code].status), ref(name)]));

/** The errors every authenticated route may answer; each route adds its own 2xx. */
const commonErrors = errorRefs("BadRequest", "Unauthenticated", "Forbidden", "TooManyRequests", "Unavailable");

function errorResponse({ code, description, message, ...rest }: (typeof ERROR_RESPONSES)[ErrorResponseName]) {
  const details = "details" in rest ? { details: rest.details } : {};
  return {
    description: `${code}: ${description}`,
    content: {
      "application/json": {
        schema: { $ref: "#/components/schemas/Error" },
        example: { status: ERROR_CODES[code].status, code, message, ...details },
      },
    },
  };
}

/** The example an operation documents, checked against what its route accepts: a refused example is a bug here. */
function exampleOf(route: ApiRoute, operationId: string): unknown {
  const examples: Readonly<Record<string, unknown>> = route.kind === "get" ? PARAMETER_EXAMPLES : REQUEST_EXAMPLES;
  if (!Object.hasOwn(examples, operationId)) {
    throw new Error(`${operationId} has no example request: add one to api-docs/request-examples.ts`);
  }
  const example = examples[operationId];
  const parsed = route.spec.request.safeParse(example);
  if (!parsed.success) {
    throw new Error(`${operationId}'s example request is refused by its route: ${parsed.error.message}`);
  }
  return example;
}

function privilegeText(route: ApiRoute): string {
  const { requires, privilegeNote } = route.spec;
  const needs = requires ? `Needs \`${requires.privilege}\`.` : "";
  return [needs, privilegeNote].filter(Boolean).join(" ");
}

function answer(route: ApiRoute) {
  const value = route.spec.response ? outputSchema(route.spec.response) : {};
  const alongside = Object.entries(route.spec.alongside ?? {}).map(([name, schema]) => [name, outputSchema(schema)]);
  return {
    description:
      alongside.length === 0
        ? "`value` holds the answer"
        : `\`value\` holds the answer; beside it ${alongside.map(([name]) => `\`${String(name)}\``).join(", ")}`,
    content: {
      "application/json": {
        schema: { type: "object", required: ["value"], properties: { value, ...Object.fromEntries(alongside) } },
      },
    },
  };
}

/** `/operations/tasks/:taskId` → `getOperationsTasksTaskId` (`post…` for a POST route) */
const pathOperationId = (method: "get" | "post", path: string) =>
  `${method}${path
    .split(/[^A-Za-z0-9]+/)
    .map((word) => word.charAt(0).toUpperCase() + word.slice(1))
    .join("")}`;

/** A POST route's parameters (path and query) and body, from its `{params, query, body}` request schema. */
function postParts(route: ApiRoute & { kind: "post" }) {
  const schema = inputSchema(route.spec.request) as {
    properties: Record<string, { properties?: Record<string, unknown>; required?: string[] }>;
  };
  const part = (name: string) => schema.properties[name];
  return { params: part("params"), query: part("query"), body: part("body") ?? {} };
}

/** A POST route (DataHub's own HTTP APIs): path and query parameters, a body, and an answer that is the whole body. */
function postOperation(route: ApiRoute & { kind: "post" }, common: Record<string, unknown>) {
  const operationId = pathOperationId("post", route.path);
  const example = exampleOf(route, operationId) as {
    params?: Record<string, unknown>;
    query?: Record<string, unknown>;
    body: unknown;
  };
  const { params, query, body } = postParts(route);
  const parameters = [
    ...Object.entries(params?.properties ?? {}).map(([name, schema]) => ({
      name,
      in: "path",
      required: true,
      schema,
      example: example.params?.[name],
    })),
    ...Object.entries(query?.properties ?? {}).map(([name, schema]) => ({
      name,
      in: "query",
      required: query?.required?.includes(name) ?? false,
      schema,
      example: example.query?.[name],
    })),
  ];
  return {
    operationId,
    ...common,
    parameters,
    requestBody: { required: true, content: { "application/json": { schema: body, example: example.body } } },
    responses: {
      "200": {
        description: "the answer, as the whole body (DataHub's shape, without Rest.li's `value`)",
        content: {
          "application/json": { schema: route.spec.response ? outputSchema(route.spec.response) : {} },
        },
      },
      ...commonErrors,
      ...errorRefs("NotFound", "UnsupportedMediaType"),
    },
  };
}

/** express `/a/:b` → OpenAPI `/a/{b}` */
const templated = (path: string) => path.replace(/:(\w+)/g, "{$1}");

function operation(route: ApiRoute) {
  const description = [route.spec.description, privilegeText(route)].filter(Boolean).join("\n\n");
  const common = {
    summary: route.spec.summary,
    ...(description ? { description } : {}),
    ...(route.spec.requires ? { "x-privilege": route.spec.requires.privilege } : {}),
  };
  if (route.kind === "post") return postOperation(route, common);
  if (route.kind === "get") {
    const operationId = pathOperationId("get", route.path);
    const params = inputSchema(route.spec.request) as { properties?: Record<string, unknown> };
    const examples = exampleOf(route, operationId) as Record<string, unknown>;
    return {
      operationId,
      ...common,
      parameters: Object.entries(params.properties ?? {}).map(([name, schema]) => ({
        name,
        in: "path",
        required: true,
        schema,
        example: examples[name],
      })),
      responses: { "200": answer(route), ...commonErrors, ...errorRefs("NotFound") },
    };
  }
  const body = inputSchema(route.spec.request);
  const optional = route.spec.request.safeParse({}).success;
  return {
    operationId: route.name,
    ...common,
    requestBody: {
      required: !optional,
      content: { "application/json": { schema: body, example: exampleOf(route, route.name) } },
    },
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
    paths[key] = { ...paths[key], [route.kind === "get" ? "get" : "post"]: operation(route) };
  }
  const root = [{ url: "/", description: "the gateway's root" }];
  return {
    openapi: "3.1.1",
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
        Object.entries(ERROR_RESPONSES).map(([name, response]) => [name, errorResponse(response)]),
      ),
    },
  };
}
