import type { z } from "zod";
import type { Privilege } from "@mdp/core";
import type { Actor } from "../auth/actor";
import { parseArgs } from "../shared/validate";
import type { GraphQLContext, Services } from "./context";

/** What a GraphQL operation declares at its edge: the HTTP action's `action({requires, input})`, for a resolver. */
export interface ResolverSpec<S extends z.ZodType> {
  /**
   * the privilege every caller needs, checked before the arguments are read; `to` completes the refusal ("… is
   * unauthorized to <to>"); null, said outright, for an operation any authenticated caller may call
   */
  requires: { privilege: Privilege; to: string } | null;
  /** the arguments' contract (or, where it depends on configuration, where the services hold it) */
  args: S | ((services: Services) => S);
}

/** ResolverSpec's `requires`: `privilege`, named "to <to>" in a refusal. */
export function needs(privilege: Privilege, to: string): { privilege: Privilege; to: string } {
  return { privilege, to };
}

/**
 * A resolver whose privilege and input contract are declared where the operation is (its *.graphql.ts), as an HTTP
 * action's are (http/action-router.ts): the privilege is checked first, then the arguments are parsed (a failure is
 * BAD_USER_INPUT naming the field and the limit), and only then does `run` call its service, with an actor it may act
 * for and arguments in shape. A check that depends on the object acted on (whose token, whose subscription) stays in
 * the service, where the object is read.
 */
export function resolver<S extends z.ZodType, R>(
  spec: ResolverSpec<S>,
  run: (services: Services, actor: Actor, args: z.output<S>) => Promise<R> | R,
): (parent: unknown, args: unknown, ctx: GraphQLContext) => Promise<R> {
  return async (_parent, args, { actor, services }) => {
    if (spec.requires) await services.engine.require(actor, spec.requires.privilege, spec.requires.to);
    const schema = typeof spec.args === "function" ? spec.args(services) : spec.args;
    return run(services, actor, parseArgs(schema, args));
  };
}
