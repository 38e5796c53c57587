import {
  GraphQLError,
  Kind,
  parse,
  visit,
  type ASTNode,
  type DocumentNode,
  type GraphQLFormattedError,
  type Source,
} from "graphql";
import { unwrapResolverError } from "@apollo/server/errors";
import { AppError, ERROR_CODES, outageError, type Logger } from "@mdp/core";
import { databaseResourceExhausted, isDatabaseResourceExhausted, unstorableValueReason } from "@mdp/db";
import { PARSE_OPTIONS } from "./document-limits";

/**
 * Apollo's and graphql-js's own codes for a request the caller got wrong (syntax, validation, query limits, an empty
 * body, the CSRF check), all BAD_USER_INPUT.
 */
const CALLER_ERROR_CODES = new Set([
  "GRAPHQL_PARSE_FAILED",
  "GRAPHQL_VALIDATION_FAILED",
  "BAD_REQUEST",
  "OPERATION_RESOLUTION_FAILURE",
  "PERSISTED_QUERY_NOT_FOUND",
  "PERSISTED_QUERY_NOT_SUPPORTED",
]);

/** AppError → GraphQLError with our extensions.code (docs/api.md "Errors"). */
export function toGraphQLError(error: AppError): GraphQLError {
  const code = ERROR_CODES[error.code].graphql;
  return new GraphQLError(abbreviateEchoes(error.message), {
    extensions: { code, ...dataHubCodeOf(code), ...(error.details ? { details: error.details } : {}) },
  });
}

/**
 * Apollo's formatError, so that every error carries one of our codes (docs/api.md "Errors"): AppErrors keep their code and
 * message; GraphQL's own errors for a bad request become BAD_USER_INPUT, naming the argument when the problem is an
 * inline value; a value PostgreSQL refused is BAD_USER_INPUT too; anything else is logged and hidden behind
 * INTERNAL_SERVER_ERROR so no internals reach the client. Every message has the client values it repeats abbreviated.
 */
export function formatError(logger: Logger) {
  const toContract = contractError(logger);
  return (formatted: GraphQLFormattedError, error: unknown): GraphQLFormattedError => {
    const answer = withDataHubCode(toContract(formatted, error));
    // Every message, graphql-js's and Apollo's above all, which repeat the client's names and values in full.
    return answer.message.length > ECHO_LIMIT ? { ...answer, message: abbreviateEchoes(answer.message) } : answer;
  };
}

/**
 * DataHub's own error codes (DataHubGraphQLErrorCode: its `extensions.code` is the number, `extensions.type` the
 * name), for each of our codes that has one. `extensions.code` stays our string; the number goes
 * in `datahubCode` beside DataHub's `type` (docs/datahub-clients.md). No DataHub code: neither key.
 */
export const DATAHUB_ERROR_CODES: Readonly<Record<string, { type: string; code: number }>> = {
  BAD_USER_INPUT: { type: "BAD_REQUEST", code: 400 },
  FORBIDDEN: { type: "UNAUTHORIZED", code: 403 },
  NOT_FOUND: { type: "NOT_FOUND", code: 404 },
  CONFLICT: { type: "CONFLICT", code: 409 },
  SERVICE_UNAVAILABLE: { type: "SERVICE_UNAVAILABLE", code: 503 },
  INTERNAL_SERVER_ERROR: { type: "SERVER_ERROR", code: 500 },
};

function dataHubCodeOf(code: unknown): { type: string; datahubCode: number } | Record<string, never> {
  const datahub =
    typeof code === "string" && Object.hasOwn(DATAHUB_ERROR_CODES, code) ? DATAHUB_ERROR_CODES[code] : null;
  return datahub ? { type: datahub.type, datahubCode: datahub.code } : {};
}

function withDataHubCode(answer: GraphQLFormattedError): GraphQLFormattedError {
  const extra = dataHubCodeOf(answer.extensions?.code);
  return "type" in extra ? { ...answer, extensions: { ...answer.extensions, ...extra } } : answer;
}

function contractError(logger: Logger) {
  return (formatted: GraphQLFormattedError, error: unknown): GraphQLFormattedError => {
    const original = unwrapResolverError(error);
    if (original instanceof AppError) {
      return { ...toGraphQLError(original).toJSON(), path: formatted.path, locations: formatted.locations };
    }
    const code = formatted.extensions?.code;
    if (typeof code === "string" && CALLER_ERROR_CODES.has(code)) {
      const at = error instanceof GraphQLError ? argumentPathOf(error) : undefined;
      return {
        message: at ? `${at}: ${formatted.message}` : formatted.message,
        locations: formatted.locations,
        extensions: { code: "BAD_USER_INPUT" },
      };
    }
    const unstorable = unstorableValueReason(original);
    if (unstorable !== undefined) {
      return {
        message: `A value in the request cannot be stored: ${unstorable}`,
        path: formatted.path,
        extensions: { code: "BAD_USER_INPUT" },
      };
    }
    // "out of shared memory": PostgreSQL's lock table full; the server's state, retried later, not a 500
    if (isDatabaseResourceExhausted(original)) {
      return { ...toGraphQLError(databaseResourceExhausted()).toJSON(), path: formatted.path };
    }
    // PostgreSQL or Redis unreachable: SERVICE_UNAVAILABLE saying which, with the seconds to wait in details
    const outage = outageError(original);
    if (outage) return { ...toGraphQLError(outage).toJSON(), path: formatted.path, locations: formatted.locations };
    if (original instanceof GraphQLError || code !== "INTERNAL_SERVER_ERROR") return formatted;
    logger.error({ err: original }, "unhandled resolver error");
    return { message: "Internal server error.", path: formatted.path, extensions: { code: "INTERNAL_SERVER_ERROR" } };
  };
}

/** The longest client value an error message repeats: longer ones are cut to this many characters and "…". */
export const ECHO_LIMIT = 100;
/** Past this a message is cut whatever it holds: a backstop for a repeated value the two rules below miss. */
const MESSAGE_LIMIT = 1_000;
/** A double-quoted value longer than the limit (graphql-js quotes names and JSON-prints values; `…` stays as cut). */
const LONG_QUOTED = new RegExp(`"([^"]{${ECHO_LIMIT + 2},})"`, "g");
/** A run without spaces well past the limit: an unquoted value (an object key in a printed variable value, a urn). */
const LONG_RUN = new RegExp(`[^\\s"]{${ECHO_LIMIT + 20},}`, "g");

/**
 * `message` with every client value it repeats cut to ECHO_LIMIT characters: graphql-js and Apollo put the client's
 * text into their messages in full — an unknown operation, field, argument or type name, a variable's invalid value
 * (`Variable "$x" got invalid value …`) — so a 200 KB operationName or variable came back whole. Idempotent.
 */
export function abbreviateEchoes(message: string): string {
  if (message.length <= ECHO_LIMIT) return message;
  const cut = message
    .replace(LONG_QUOTED, (_quoted, value: string) => `"${head(value)}…"`)
    .replace(LONG_RUN, (run) => `${head(run)}…`);
  return cut.length > MESSAGE_LIMIT ? `${head(cut, MESSAGE_LIMIT - 1)}…` : cut;
}

/** The first `length` characters, without half a surrogate pair at the end. */
function head(text: string, length = ECHO_LIMIT): string {
  const code = text.charCodeAt(length - 1);
  return text.slice(0, code >= 0xd800 && code <= 0xdbff ? length - 1 : length);
}

/**
 * The document of a request's errors, parsed once however many errors it has: all of one request's errors share its
 * Source, and parsing it again for each of up to 100 validation errors held a gateway for seconds.
 */
const parsedSources = new WeakMap<Source, DocumentNode | null>();
function documentOf(source: Source): DocumentNode | null {
  let document = parsedSources.get(source);
  if (document === undefined) {
    try {
      document = parse(source, PARSE_OPTIONS);
    } catch {
      document = null; // the operation does not parse: a syntax error, which points at a position, not a value
    }
    parsedSources.set(source, document);
  }
  return document;
}

/**
 * Where in the operation an invalid inline value is, e.g. `createAccessToken(input.duration)`: graphql-js's message
 * names only the type ("Value "TWO_HOURS" does not exist in "AccessTokenDuration" enum."). Found by walking the
 * operation to the node the error points at; undefined when the error is about something else.
 */
function argumentPathOf(error: GraphQLError): string | undefined {
  const target = error.nodes?.[0]?.loc;
  if (!target || !error.source) return undefined;
  const document = documentOf(error.source);
  if (!document) return undefined;
  let found: string | undefined;
  visit(document, {
    enter(node, _key, parent, _path, ancestors) {
      if (found !== undefined) return false;
      // Only the nodes around the target are entered: each error costs the depth of its node, not the document.
      if (node.loc && (node.loc.end < target.start || node.loc.start > target.end)) return false;
      if (node.loc?.start !== target.start || node.loc.end !== target.end) return undefined;
      let field = "";
      const names: string[] = [];
      // `ancestors` stops before `parent`; arrays (lists of fields, arguments) are steps too.
      const steps = [...ancestors, parent, node] as ReadonlyArray<ASTNode | readonly ASTNode[] | undefined>;
      for (const step of steps) {
        if (!step || !("kind" in step)) continue;
        if (step.kind === Kind.FIELD) field = step.name.value;
        else if (step.kind === Kind.ARGUMENT) names.splice(0, names.length, step.name.value);
        else if (step.kind === Kind.OBJECT_FIELD) names.push(step.name.value);
      }
      if (names.length > 0) found = `${field}(${names.join(".")})`;
      return false;
    },
  });
  return found;
}
