import { ApolloServer, type ApolloServerPlugin } from "@apollo/server";
import { ApolloServerPluginCacheControlDisabled } from "@apollo/server/plugin/disabled";
import { ApolloServerPluginDrainHttpServer } from "@apollo/server/plugin/drainHttpServer";
import { expressMiddleware } from "@as-integrations/express5";
import type { RequestHandler } from "express";
import type { Server } from "node:http";
import type { Logger } from "@mdp/core";
import { actorOf } from "../auth/auth.middleware";
import type { GraphQLContext, Services } from "./context";
import { formatError } from "./errors";
import { queryLimits } from "./query-limits";
import { resolvers, typeDefs } from "./schema";
import { rewriteTypeAliases } from "./type-aliases";

export interface GraphQLDeps {
  logger: Logger;
  httpServer: Server;
  services: Services;
}

const noStore: ApolloServerPlugin<GraphQLContext> = {
  async requestDidStart() {
    return {
      async willSendResponse({ response }) {
        response.http.headers.set("cache-control", "no-store");
      },
    };
  },
};

/** Apollo Server 5 behind express 5. The caller is authenticated before Apollo sees the request. */
export async function createGraphQLMiddleware(
  deps: GraphQLDeps,
): Promise<{ middleware: RequestHandler[]; stop: () => Promise<void> }> {
  const server = new ApolloServer<GraphQLContext>({
    typeDefs,
    resolvers,
    introspection: true,
    includeStacktraceInErrorResponses: false,
    // main.ts owns shutdown; Apollo's own signal handlers (on outside NODE_ENV=test) would race it.
    stopOnTerminationSignals: false,
    validationRules: [queryLimits],
    formatError: formatError(deps.logger),
    plugins: [
      ApolloServerPluginDrainHttpServer({ httpServer: deps.httpServer }),
      // Apollo's cache-control plugin hooks every field resolver of every request (on a page of 100 tokens that is a
      // tenth of the request's CPU) to work out a max-age that, with no @cacheControl hints in this schema, is always
      // 0: it only ever answered `cache-control: no-store`. That header is kept (responses carry tokens), the hooks go.
      ApolloServerPluginCacheControlDisabled(),
      noStore,
    ],
  });
  await server.start();
  const apollo = expressMiddleware(server, {
    context: async ({ res }) => ({ actor: actorOf(res.locals), services: deps.services }),
  });
  return { middleware: [rewriteTypeAliases, apollo], stop: () => server.stop() };
}
