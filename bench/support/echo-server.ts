/**
 * The baseline: a bare Apollo echo mutation on the same stack as the gateway (express 5, express.json with the same
 * limit, Apollo Server 5 through @as-integrations/express5), with no authentication, database or logging.
 */
import { serveBareApollo } from "./bare-apollo";

void serveBareApollo("echo server", {
  typeDefs: `type Query { ok: Boolean } type Mutation { echo(input: String!): String! }`,
  resolvers: { Mutation: { echo: (_: unknown, args: { input: string }) => args.input } },
});
