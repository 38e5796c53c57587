import { ApolloServer, type ApolloServerPlugin } from "@apollo/server";
import {
  ApolloServerPluginCacheControlDisabled,
  ApolloServerPluginInlineTraceDisabled,
} from "@apollo/server/plugin/disabled";
import { ApolloServerPluginDrainHttpServer } from "@apollo/server/plugin/drainHttpServer";
import { expressMiddleware } from "@as-integrations/express5";
import type { RequestHandler, Response } from "express";
import type { Server } from "node:http";
import { Kind, type OperationDefinitionNode } from "graphql";
import type { Logger } from "@mdp/core";
import { readerWrote } from "@mdp/db";
import { actorOf } from "../auth/auth.middleware";
import type { GraphQLContext, Services } from "./context";
import { DocumentCache } from "./document-cache";
import { PARSE_OPTIONS, refuseOversizedDocuments } from "./document-limits";
import { formatError } from "./errors";
import { refuseCostlyOperation } from "./query-cost";
import { armor, INTROSPECTION, queryLimits } from "./query-limits";
import { setRequestErrorStatus } from "./request-error-status";
import { setRetryAfterStatus } from "./retry-status";
import { resolvers, typeDefs } from "./schema";
import { rewriteTypeAliases } from "./type-aliases";

export interface GraphQLDeps {
  logger: Logger;
  httpServer: Server;
  services: Services;
}

/** The express response of a request, in its context (a key of ours: Apollo hands plugins a copy of the context). */
const RESPONSE = Symbol("express response");

/**
 * Every per-request hook of the gateway's, in one plugin: Apollo calls each plugin's listener at every stage of every
 * request (an async call, its promise and an await per listener, for stages it has no hook for too), so six plugins
 * of one hook each cost more than their hooks. In order:
 * - once the operation is known: the request's HTTP metrics and token usage are labelled with its type and root
 *   fields (`res.locals.action`, `res.locals.operations`: http/metrics.ts, token-usage), a refused one too; then an
 *   operation costing more than MAX_COST is refused before any resolver runs (query-cost.ts: validation rules are
 *   cached per document and never see variables, so the cost is per request);
 * - before the answer leaves: `cache-control: no-store` (answers carry tokens); 429 / 503 with Retry-After for an
 *   operation refused for a reason to wait out (retry-status.ts); 200 with errors[] for a refused request answered as
 *   application/json (request-error-status.ts); after a mutation, the primary's WAL position noted for its caller,
 *   whose next listings then read a replica only once it has replayed it (read-replicas.ts; nothing without replicas).
 */
const perRequest: ApolloServerPlugin<GraphQLContext> = {
  async requestDidStart() {
    return {
      async didResolveOperation({ schema, document, operation, request, contextValue }) {
        if (!operation) return; // Apollo refuses a request naming no operation of the document
        const res = (contextValue as { [RESPONSE]?: Response })[RESPONSE];
        if (res) {
          res.locals.action = operation.operation;
          res.locals.operations = rootFieldsOf(operation);
        }
        refuseCostlyOperation(schema, document, operation, request.variables ?? {});
      },
      async willSendResponse({ request, response, operation }) {
        response.http.headers.set("cache-control", "no-store");
        setRetryAfterStatus(response);
        setRequestErrorStatus(request, response);
        if (operation?.operation === "mutation") await readerWrote();
      },
    };
  },
};

/**
 * The operation's root fields as `Query.me`, `Mutation.createAccessToken` (what a token's usage counts: names from
 * the schema, the document having been validated), each once.
 */
function rootFieldsOf(operation: OperationDefinitionNode): string[] {
  const type =
    operation.operation === "query" ? "Query" : operation.operation === "mutation" ? "Mutation" : "Subscription";
  const fields = new Set<string>();
  for (const selection of operation.selectionSet.selections) {
    if (selection.kind === Kind.FIELD && selection.name.value !== "__typename") {
      fields.add(`${type}.${selection.name.value}`);
    }
  }
  return fields.size > 0 ? [...fields] : [`${type}`];
}

/** Apollo Server 5 behind express 5. The caller is authenticated before Apollo sees the request. */
export async function createGraphQLMiddleware(
  deps: GraphQLDeps,
): Promise<{ middleware: RequestHandler[]; stop: () => Promise<void> }> {
  const server = new ApolloServer<GraphQLContext>({
    typeDefs,
    resolvers,
    introspection: INTROSPECTION,
    includeStacktraceInErrorResponses: false,
    // main.ts owns shutdown; Apollo's own signal handlers (on outside NODE_ENV=test) would race it.
    stopOnTerminationSignals: false,
    // Limits, in the order a document meets them: its text (refuseOversizedDocuments, before anything parses it), its
    // tokens (graphql-js' parser), what it selects (queryLimits first, then armor's rules), what it costs with its
    // variables (refuseCostlyOperation, in perRequest).
    parseOptions: PARSE_OPTIONS,
    validationRules: [queryLimits, ...armor.validationRules],
    // Parsed documents bounded by the heap they hold, not by their count or JSON (document-cache.ts).
    documentStore: new DocumentCache(),
    // Automatic persisted queries would be a second store of query texts; DataHub's clients do not send them.
    persistedQueries: false,
    allowBatchedHttpRequests: false,
    formatError: formatError(deps.logger),
    plugins: [
      ApolloServerPluginDrainHttpServer({ httpServer: deps.httpServer }),
      // Apollo's cache-control plugin hooks every field resolver of every request (on a page of 100 tokens that is a
      // tenth of the request's CPU) to work out a max-age that, with no @cacheControl hints in this schema, is always
      // 0: it only ever answered `cache-control: no-store`. That header is kept (responses carry tokens), the hooks go.
      ApolloServerPluginCacheControlDisabled(),
      // Federation's inline traces, which Apollo adds to do nothing unless the schema is a subgraph (it is not): one
      // listener less per request.
      ApolloServerPluginInlineTraceDisabled(),
      ...armor.plugins,
      perRequest,
    ],
  });
  await server.start();
  const apollo = expressMiddleware(server, {
    context: async ({ res }) => ({ actor: actorOf(res.locals), services: deps.services, [RESPONSE]: res }),
  });
  return { middleware: [refuseOversizedDocuments, rewriteTypeAliases, apollo], stop: () => server.stop() };
}
