/**
 * The floor of listAccessTokens: a bare express 5 route (express.json, nothing else) that runs the gateway's list
 * statement (../support/token-floor-statements.ts, prepared the same way, on a pool of the gateway's size) and answers
 * the fields the benchmark's GraphQL query selects. No authentication, policy check or GraphQL: what serving this SQL
 * over HTTP costs at the least. Not a target. Exits on SIGTERM.
 */
import express from "express";
import pg from "pg";
import { listTokens } from "../support/token-floor-statements";

async function main(): Promise<void> {
  const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 10 });
  const actorUrn = process.env.LIST_ACTOR_URN!;
  const app = express();
  app.use(express.json({ limit: "1mb" }));
  app.post("/list", (_req, res, next) => {
    listTokens(pool, actorUrn, new Date(), 0, 100)
      .then((rows) => {
        const tokens = rows
          .filter((row) => row.id !== null)
          .map((row) => ({ urn: `urn:li:dataHubAccessToken:${row.id}`, id: row.id, actorUrn: row.actor_urn }));
        res.json({ data: { listAccessTokens: { total: rows[0]!.total, tokens } } });
      })
      .catch(next);
  });
  const port = Number(process.env.PORT);
  app.listen(port, "127.0.0.1", () => process.stdout.write(`list floor server listening on ${port}\n`));
  process.on("SIGTERM", () => process.exit(0));
}

void main();
