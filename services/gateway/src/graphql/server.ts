import { ApolloServer } from "@apollo/server";
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
    plugins: [ApolloServerPluginDrainHttpServer({ httpServer: deps.httpServer })],
  });
  await server.start();
  const apollo = expressMiddleware(server, {
    context: async ({ res }) => ({ actor: actorOf(res.locals), services: deps.services }),
  });
  return { middleware: [rewriteTypeAliases, apollo], stop: () => server.stop() };
}
