import { GraphQLError, GraphQLScalarType, Kind } from "graphql";

/** Epoch milliseconds do not fit GraphQL's 32-bit Int; DataHub calls this scalar Long. */
export const Long = new GraphQLScalarType({
  name: "Long",
  description: "A 64-bit integer (epoch milliseconds for times), serialized as a JSON number.",
  serialize: (value) => (typeof value === "bigint" ? Number(value) : value),
  parseValue: (value) => {
    if (typeof value !== "number" || !Number.isSafeInteger(value)) throw new GraphQLError("Long must be an integer");
    return value;
  },
  parseLiteral: (ast) => {
    if (ast.kind !== Kind.INT) throw new GraphQLError("Long must be an integer");
    return Number(ast.value);
  },
});
