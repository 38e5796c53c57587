import type { GraphQLContext } from "./context";
import { Long } from "./modules/scalars";
import { policyResolvers, policyTypeDefs } from "./modules/policies.graphql";
import { testResolvers, testTypeDefs } from "./modules/tests.graphql";
import { tokenResolvers, tokenTypeDefs } from "./modules/tokens.graphql";

const rootTypeDefs = /* GraphQL */ `
  scalar Long

  type Query {
    "The authenticated caller and the privileges it holds."
    me: Me!
  }

  type Mutation

  type Me {
    urn: String!
    privileges: [String!]!
  }
`;

const rootResolvers = {
  Long,
  Query: {
    me: (_parent: unknown, _args: unknown, ctx: GraphQLContext) => ({ urn: ctx.actor.urn }),
  },
  Me: {
    // Worked out only when asked for: `{ me { urn } }` is what clients call to check who they are.
    privileges: async (me: { urn: string }, _args: unknown, ctx: GraphQLContext) =>
      [...(await ctx.services.engine.privilegesOf(me.urn))].sort(),
  },
};

export const typeDefs = [rootTypeDefs, tokenTypeDefs, policyTypeDefs, testTypeDefs];
export const resolvers = [rootResolvers, tokenResolvers, policyResolvers, testResolvers];
