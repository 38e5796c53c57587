import { GraphQLError, type GraphQLFormattedError } from "graphql";
import { unwrapResolverError } from "@apollo/server/errors";
import { AppError, ERROR_CODES, type Logger } from "@mdp/core";

/** AppError → GraphQLError with the contract's extensions.code. */
export function toGraphQLError(error: AppError): GraphQLError {
  return new GraphQLError(error.message, {
    extensions: { code: ERROR_CODES[error.code].graphql, ...(error.details ? { details: error.details } : {}) },
  });
}

/**
 * Apollo's formatError: AppErrors keep their code and message; GraphQL's own errors (syntax, validation) pass through;
 * anything else is logged and hidden behind INTERNAL_SERVER_ERROR so no internals reach the client.
 */
export function formatError(logger: Logger) {
  return (formatted: GraphQLFormattedError, error: unknown): GraphQLFormattedError => {
    const original = unwrapResolverError(error);
    if (original instanceof AppError) {
      return { ...toGraphQLError(original).toJSON(), path: formatted.path, locations: formatted.locations };
    }
    if (original instanceof GraphQLError || formatted.extensions?.code !== "INTERNAL_SERVER_ERROR") return formatted;
    logger.error({ err: original }, "unhandled resolver error");
    return { message: "Internal server error.", path: formatted.path, extensions: { code: "INTERNAL_SERVER_ERROR" } };
  };
}
