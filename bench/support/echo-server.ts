/**
 * The baseline: a bare Apollo echo mutation on the same stack as the gateway (express 5, express.json with the same
 * limit, Apollo Server 5 through @as-integrations/express5), with no authentication, database or logging.
 */
import { ApolloServer } from "@apollo/server";
import { expressMiddleware } from "@as-integrations/express5";
import express from "express";

async function main(): Promise<void> {
  const server = new ApolloServer({
    typeDefs: `type Query { ok: Boolean } type Mutation { echo(input: String!): String! }`,
    resolvers: { Mutation: { echo: (_: unknown, args: { input: string }) => args.input } },
    stopOnTerminationSignals: false,
  });
  await server.start();
  const app = express();
  app.use(express.json({ limit: "1mb" }));
  app.use("/api/graphql", expressMiddleware(server));
  const port = Number(process.env.PORT);
  app.listen(port, "127.0.0.1", () => process.stdout.write(`echo server listening on ${port}\n`));
  process.on("SIGTERM", () => process.exit(0));
}

void main();
