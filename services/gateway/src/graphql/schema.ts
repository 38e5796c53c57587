import { refuseUnstorable } from "@mdp/core";
import type { GraphQLContext } from "./context";
import { Long } from "./scalars";
import { webhookResolvers, webhookTypeDefs } from "../webhooks/webhooks.graphql";
import { delegatedWorkResolvers, delegatedWorkTypeDefs } from "../incident-response/delegated-work.graphql";
import { policyResolvers, policyTypeDefs } from "../policies/policies.graphql";
import { retentionResolvers, retentionTypeDefs } from "../retention/retention.graphql";
import { taskResolvers, taskTypeDefs } from "../operations/tasks.graphql";
import { testResolvers, testTypeDefs } from "../metadata-tests/tests.graphql";
import { testResultResolvers, testResultTypeDefs } from "../metadata-tests/test-results.graphql";
import { testRunDiffResolvers, testRunDiffTypeDefs } from "../metadata-tests/test-run-diff.graphql";
import { testImpactResolvers, testImpactTypeDefs } from "../metadata-tests/test-impact.graphql";
import { serviceAccountResolvers, serviceAccountTypeDefs } from "../service-accounts/service-accounts.graphql";
import { tokenResolvers, tokenTypeDefs } from "../tokens/tokens.graphql";
import { platformEventsResolvers, platformEventsTypeDefs } from "../events/platform-events.graphql";
import { webAppConfigResolvers, webAppConfigTypeDefs } from "../webapp/web-app-config.graphql";
import { webAppResolvers, webAppTypeDefs } from "../webapp/web-app.graphql";

const rootTypeDefs = /* GraphQL */ `
  scalar Long

  type Query {
    """
    The authenticated caller and the privileges this request may use: its user's, and for an access token only those
    its scopes, its creator and the token it was created with also allow now.
    """
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
    // Worked out only when asked for: `{ me { urn } }` is what clients call to check who they are. The request's own
    // set, so a token shows what it may do (its chain's bounds), not all its user holds.
    privileges: async (_me: { urn: string }, _args: unknown, ctx: GraphQLContext) =>
      [...(await ctx.services.engine.privilegesOf(ctx.actor))].sort(),
  },
};

export const typeDefs = [
  rootTypeDefs,
  tokenTypeDefs,
  webhookTypeDefs,
  policyTypeDefs,
  testTypeDefs,
  testResultTypeDefs,
  testRunDiffTypeDefs,
  testImpactTypeDefs,
  taskTypeDefs,
  retentionTypeDefs,
  delegatedWorkTypeDefs,
  serviceAccountTypeDefs,
  platformEventsTypeDefs,
  webAppTypeDefs,
  webAppConfigTypeDefs,
];
type Resolver = (parent: unknown, args: Record<string, unknown>, ...rest: unknown[]) => unknown;

/** Every query and mutation refuses arguments holding what cannot be stored, naming the argument (see refuseUnstorable). */
function refusingUnstorable<Map extends object>(map: Map): Map {
  const wrapped = { ...map } as Record<string, unknown>;
  for (const root of ["Query", "Mutation"] as const) {
    const fields = (map as Record<string, unknown>)[root] as Record<string, Resolver> | undefined;
    if (!fields) continue;
    wrapped[root] = Object.fromEntries(
      Object.entries(fields).map(([name, resolve]) => [
        name,
        (parent: unknown, args: Record<string, unknown>, ...rest: unknown[]) => {
          refuseUnstorable(args, "");
          return resolve(parent, args, ...rest);
        },
      ]),
    );
  }
  return wrapped as Map;
}

export const resolvers = [
  refusingUnstorable(rootResolvers),
  refusingUnstorable(tokenResolvers),
  refusingUnstorable(webhookResolvers),
  refusingUnstorable(policyResolvers),
  refusingUnstorable(testResolvers),
  refusingUnstorable(testResultResolvers),
  refusingUnstorable(testRunDiffResolvers),
  refusingUnstorable(testImpactResolvers),
  refusingUnstorable(taskResolvers),
  refusingUnstorable(retentionResolvers),
  refusingUnstorable(delegatedWorkResolvers),
  refusingUnstorable(serviceAccountResolvers),
  refusingUnstorable(platformEventsResolvers),
  refusingUnstorable(webAppResolvers),
  refusingUnstorable(webAppConfigResolvers),
];
