/**
 * What a caller (authenticated or not) is told while PostgreSQL is down (a private server of this test's own): /ready
 * says which check failed in a fixed word, never the error behind it, which goes to the log; a GraphQL request
 * refused before Apollo runs (its bearer token cannot be checked) carries `extensions.details.retryAfterSeconds` as
 * every other outage answer does.
 */
import { Writable } from "node:stream";
import { createLogger, OUTAGE_RETRY_AFTER_SECONDS } from "@mdp/core";
import { createRedis, closeRedis, whenReady } from "@mdp/queues";
import { waitFor } from "../../../test/support/services";
import { Readiness } from "../src/readiness";
import { bearer, createToken, ROOT, startGateway, type Harness } from "./support/gateway-harness";
import { privatePostgres, type PrivateServer } from "./support/private-servers";

describe("answers during a PostgreSQL outage", () => {
  let pg: PrivateServer;
  let h: Harness;

  beforeAll(async () => {
    pg = await privatePostgres();
    h = await startGateway({ DATABASE_URL: pg.url });
  }, 60_000);
  afterAll(async () => {
    await pg?.start().catch(() => undefined);
    await h?.close();
    await pg?.destroy();
  }, 30_000);

  it("/ready names the failed check in a fixed word; the error's text goes to the log only", async () => {
    const lines: string[] = [];
    const logger = createLogger(
      "readiness-test",
      "info",
      new Writable({
        write(chunk: Buffer, _encoding, done) {
          lines.push(chunk.toString());
          done();
        },
      }),
    );
    const redis = createRedis(h.config.REDIS_URL, "producer");
    await whenReady(redis);
    const readiness = new Readiness(h.prisma, redis, pg.url, logger);
    try {
      expect(await readiness.check()).toEqual({
        ready: true,
        checks: { postgres: "ok", redis: "ok", migrations: "ok" },
      });
      await pg.stop();
      const before = await fetch(`${h.baseUrl}/ready`);
      const text = await before.text();
      expect(before.status).toBe(503);
      expect(JSON.parse(text)).toEqual({
        ready: false,
        checks: { postgres: "unreachable", redis: "ok", migrations: expect.any(String) },
      });
      // nothing of the error: no host, port, Prisma or statement
      expect(text).not.toMatch(/127\.0\.0\.1|prisma|invocation|\$queryRaw|database server|ECONNREFUSED/i);
      expect(JSON.parse(text).checks.migrations).toMatch(/^(ok|unknown)$/);

      // the detail is logged, once for a state however often /ready is polled
      expect((await readiness.check()).checks.postgres).toBe("unreachable");
      await readiness.check();
      const warnings = lines.filter((line) => line.includes("readiness check postgres: unreachable"));
      expect(warnings).toHaveLength(1);
      expect(JSON.parse(warnings[0]!).detail).toMatch(/Can't reach database server|ECONNREFUSED|connect/i);
      await pg.start();
      await waitFor("readiness again", async () => (await readiness.check()).ready);
      expect(lines.some((line) => line.includes("readiness check ok again"))).toBe(true);
    } finally {
      await pg.start();
      await closeRedis(redis);
    }
  }, 30_000);

  it("GraphQL refused before Apollo (a bearer token that cannot be checked) carries retryAfterSeconds", async () => {
    const { token } = await createToken(h, ROOT); // never used: its check needs PostgreSQL
    await pg.stop();
    try {
      const res = await fetch(`${h.baseUrl}/api/graphql`, {
        method: "POST",
        headers: { "content-type": "application/json", ...bearer(token) },
        body: JSON.stringify({ query: "{ me { urn } }" }),
      });
      expect(res.status).toBe(503);
      expect(res.headers.get("retry-after")).toBe(String(OUTAGE_RETRY_AFTER_SECONDS));
      const body = (await res.json()) as { errors: Array<Record<string, unknown>> };
      expect(body.errors).toEqual([
        {
          message: "PostgreSQL is unavailable; retry shortly.",
          extensions: {
            code: "SERVICE_UNAVAILABLE",
            type: "SERVICE_UNAVAILABLE",
            datahubCode: 503,
            details: { retryAfterSeconds: OUTAGE_RETRY_AFTER_SECONDS },
          },
        },
      ]);
    } finally {
      await pg.start();
    }
  }, 30_000);
});
