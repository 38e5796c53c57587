/**
 * The floors of the token operations (bench/tokens, bench/cost) on the gateway's own stack: Apollo Server 5 behind
 * express 5, set up like the echo baseline, serving the gateway's own schema (as the running gateway describes it by
 * introspection: gateway-schema.ts, written to SCHEMA_FILE) with resolvers that do only the bare minimum. No
 * authentication, policy check, logging or metrics. They show how far Apollo alone lets each operation go.
 * - me answers ME_URN from memory.
 * - listAccessTokens answers a constant page of 100 tokens of LIST_ACTOR_URN held in memory: no database at all.
 * - createAccessToken runs the gateway's create statement (token-floor-statements.ts, on DATABASE_URL) and answers a
 *   constant token: no signing, hashing or validation.
 * With FLOOR_PROTECTIONS set, the protections every gateway request pays as their libraries give them come first
 * (floor-protections.ts): FLOOR_BEARER is the one bearer token accepted, and `me` answers its caller.
 */
import "./floor-telemetry";
import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import pg from "pg";
import { serveBareApollo } from "./bare-apollo";
import { callers, protect } from "./floor-protections";
import { createToken } from "./token-floor-statements";

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
  const me = { urn: process.env.ME_URN ?? "urn:li:corpuser:admin" };
  // The token a bearer caller authenticated with, which the gateway records as the new token's parent.
  const parentTokenId = randomUUID();
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
  await serveBareApollo(
    "token floor server",
    {
      typeDefs: readFileSync(process.env.SCHEMA_FILE!, "utf8"),
      resolvers: {
        Query: {
          me: () => {
            if (!process.env.FLOOR_PROTECTIONS) return me;
            // Behind the protections, the caller authentication found (none would be a lost context, not a fallback).
            const caller = callers.getStore();
            if (!caller) throw new Error("no authenticated caller in the request's context");
            return { urn: caller.urn };
          },
          listAccessTokens: () => ({ start: 0, count: page.length, total: 10_000, tokens: page }),
        },
        Mutation: {
          createAccessToken: async (_: unknown, { input }: { input: { actorUrn: string; name: string } }) => {
            const id = randomUUID();
            const createdAt = Date.now();
            const metadata = {
              ...{ urn: `urn:li:dataHubAccessToken:${id}`, id, name: input.name, description: null },
              ...{ actorUrn: input.actorUrn, ownerUrn: input.actorUrn },
            };
            await createToken(pool, {
              ...{ id, name: input.name, actorUrn: input.actorUrn, parentTokenId },
              ...{ tokenHash: randomUUID().replaceAll("-", "").repeat(2), createdAt },
              exp: Math.floor(createdAt / 1000) + 3600,
            });
            return { accessToken, metadata };
          },
        },
      },
    },
    protections(me.urn),
  );
}

/** The protections to mount (FLOOR_PROTECTIONS), accepting FLOOR_BEARER for `urn` for a day; none when unset. */
function protections(urn: string) {
  if (!process.env.FLOOR_PROTECTIONS) return undefined;
  const bearer = process.env.FLOOR_BEARER;
  if (!bearer) throw new Error("FLOOR_PROTECTIONS needs FLOOR_BEARER, the one token the floor accepts");
  const tokens = new Map([[bearer, { urn, expiresAt: Date.now() + 86_400_000 }]]);
  return (app: Parameters<typeof protect>[0]) => protect(app, tokens);
}

void main();
