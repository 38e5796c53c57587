/**
 * The floors of listAccessTokens and createAccessToken on the gateway's own stack: Apollo Server 5 behind
 * express 5, set up like the echo baseline, serving the gateway's own schema (as the running gateway describes it by
 * introspection, read by tokens.bench.ts into SCHEMA_FILE) with resolvers that do only the bare minimum. No authentication, policy check, logging or metrics. Not targets: they show how far Apollo alone
 * lets each operation go.
 * - listAccessTokens answers a constant page of 100 tokens held in memory: no database at all.
 * - createAccessToken runs the gateway's create statement (floor-statements.ts) and answers a constant token: no
 *   signing, hashing or validation.
 */
import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import pg from "pg";
import { serveBareApollo } from "../support/bare-apollo";
import { createToken } from "./floor-statements";

/** AccessTokenMetadata as the schema has it. */
interface TokenMetadata {
  urn: string;
  id: string;
  name: string;
  description: string | null;
  actorUrn: string;
  ownerUrn: string;
  createdAt: number;
  expiresAt: number | null;
  lastUsedAt: number | null;
}

async function main(): Promise<void> {
  const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 10 });
  const actorUrn = process.env.LIST_ACTOR_URN!;
  const createdAt = Date.now();
  const page: TokenMetadata[] = Array.from({ length: 100 }, (_, i) => {
    const id = randomUUID();
    return {
      ...{
        urn: `urn:li:dataHubAccessToken:${id}`,
        id,
        name: `seeded ${i}`,
        description: null,
        actorUrn,
        ownerUrn: actorUrn,
      },
      ...{ createdAt: createdAt - i * 1000, expiresAt: createdAt + 86_400_000, lastUsedAt: null },
    };
  });
  const accessToken = "x".repeat(400); // about the length of a real one
  await serveBareApollo("apollo floor server", {
    typeDefs: readFileSync(process.env.SCHEMA_FILE!, "utf8"),
    resolvers: {
      Query: { listAccessTokens: () => ({ start: 0, count: page.length, total: 10_000, tokens: page }) },
      Mutation: {
        createAccessToken: async (_: unknown, { input }: { input: { actorUrn: string; name: string } }) => {
          const id = randomUUID();
          const createdAt = Date.now();
          const metadata = {
            ...{ urn: `urn:li:dataHubAccessToken:${id}`, id, name: input.name, description: null },
            ...{ actorUrn: input.actorUrn, ownerUrn: input.actorUrn },
          };
          await createToken(pool, {
            ...{ id, urn: metadata.urn, name: input.name, actorUrn: input.actorUrn },
            ...{ tokenHash: randomUUID().replaceAll("-", "").repeat(2), createdAt },
            exp: Math.floor(createdAt / 1000) + 3600,
          });
          return { accessToken, metadata };
        },
      },
    },
  });
}

void main();
