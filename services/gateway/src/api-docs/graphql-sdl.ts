import { ApolloServer } from "@apollo/server";
import {
  buildClientSchema,
  getIntrospectionQuery,
  lexicographicSortSchema,
  printSchema,
  type GraphQLSchema,
  type IntrospectionQuery,
} from "graphql";
import { resolvers, typeDefs } from "../graphql/schema";

/**
 * The GraphQL schema as SDL, types and fields sorted by name so that the text depends on the schema alone (not on the
 * order of the modules' typeDefs). Checked in as docs/api/schema.graphql (`pnpm api:write`); a test compares it with
 * what the gateway serves by introspection.
 */
export function printSdl(schema: GraphQLSchema): string {
  return `${printSchema(lexicographicSortSchema(schema))}\n`;
}

/**
 * The schema the gateway serves, built as it builds it (Apollo, from the same typeDefs and resolvers: the resolvers'
 * scalars bring their descriptions) and read by introspection, as a client reads it; no server is started.
 */
export async function servedSchema(): Promise<GraphQLSchema> {
  const server = new ApolloServer({ typeDefs, resolvers });
  try {
    const response = await server.executeOperation({ query: getIntrospectionQuery() });
    if (response.body.kind !== "single" || !response.body.singleResult.data) {
      throw new Error("introspection of the GraphQL schema failed");
    }
    return buildClientSchema(response.body.singleResult.data as unknown as IntrospectionQuery);
  } finally {
    await server.stop();
  }
}
