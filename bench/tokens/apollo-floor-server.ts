/**
 * The floors of listAccessTokens and createAccessToken on the stack the issue prescribes: Apollo Server 5 behind
 * express 5, set up like the echo baseline, serving the gateway's own schema (typeDefs) with resolvers that do only
 * the bare minimum. No authentication, policy check, logging or metrics. Not targets: they show how far Apollo alone
 * lets each operation go.
 * - listAccessTokens answers a constant page of 100 tokens held in memory: no database at all.
 * - createAccessToken runs the gateway's own create statement (createStatement) and answers a constant token: no
 *   signing, hashing or validation.
 */
import { randomUUID } from "node:crypto";
import pg from "pg";
import { typeDefs } from "../../services/gateway/src/graphql/schema";
import { createStatement, type TokenMetadata } from "../../services/gateway/src/tokens/token.service";
import { serveBareApollo } from "../support/bare-apollo";

async function main(): Promise<void> {
  const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 10 });
  const actorUrn = process.env.LIST_ACTOR_URN!;
  const createdAt = Date.now();
  const page: TokenMetadata[] = Array.from({ length: 100 }, (_, i) => {
    const id = randomUUID();
    return {
      ...{ urn: `urn:li:accessToken:${id}`, id, name: `seeded ${i}`, description: null, actorUrn, ownerUrn: actorUrn },
      ...{ createdAt: createdAt - i * 1000, expiresAt: createdAt + 86_400_000, lastUsedAt: null },
    };
  });
  const accessToken = "x".repeat(400); // about the length of a real one
  await serveBareApollo("apollo floor server", {
    typeDefs,
    resolvers: {
      Query: { listAccessTokens: () => ({ start: 0, count: page.length, total: 10_000, tokens: page }) },
      Mutation: {
        createAccessToken: async (_: unknown, { input }: { input: { actorUrn: string; name: string } }) => {
          const id = randomUUID();
          const createdAt = Date.now();
          const metadata = {
            ...{ urn: `urn:li:accessToken:${id}`, id, name: input.name, description: null },
            ...{ actorUrn: input.actorUrn, ownerUrn: input.actorUrn },
          };
          const { statement, name } = createStatement({
            ...{ id, type: "PERSONAL", metadata, tokenHash: randomUUID().replaceAll("-", "").repeat(2) },
            ...{
              createdAt,
              exp: Math.floor(createdAt / 1000) + 3600,
              audit: { actorUrn: input.actorUrn, details: {} },
            },
          });
          await pool.query({ name, text: statement.text, values: statement.values });
          return { accessToken, metadata };
        },
      },
    },
  });
}

void main();
