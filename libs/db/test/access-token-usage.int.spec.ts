/**
 * A token's usage is read back in one snapshot (real PostgreSQL): a gateway's flush writes a use's client and its count
 * in one transaction, and a listing must show both or neither. Read in two statements, a flush that committed between
 * them showed the count without its client.
 */
import { createDatabase, type Database } from "@mdp/db";
import { createTestDatabase, type TestDatabase } from "@mdp/db/testing";
import { accessTokenUsageOf, recordAccessTokenUsage } from "../src";

const ACTOR = "urn:li:corpuser:usage";

describe("a token's usage as read back", () => {
  let testDb: TestDatabase;
  let db: Database;
  let tokenId: string;

  beforeAll(async () => {
    testDb = await createTestDatabase("access_token_usage");
    db = createDatabase(testDb.url);
    const { rows } = await db.pool.query<{ id: string }>(
      `INSERT INTO access_token (id, name, actor_urn, owner_urn, token_hash, created_at, expires_at)
       VALUES (gen_random_uuid(), 'used', $1, $1, md5('used') || md5('token'), now(), now() + interval '1 day')
       RETURNING id::text`,
      [ACTOR],
    );
    tokenId = rows[0]!.id;
  });
  afterAll(async () => {
    await db.close();
    await testDb.drop();
  });

  it("shows a flush's client and count together, whenever the flush commits during the read", async () => {
    const flush = () =>
      db.prisma.$transaction((tx) =>
        recordAccessTokenUsage(tx, {
          clients: { tokenIds: [tokenId], ips: ["10.0.0.7"], userAgents: ["datahub-cli"], times: [new Date()] },
          operations: {
            tokenIds: [tokenId],
            days: [new Date().toISOString().slice(0, 10)],
            operations: ["me"],
            counts: [1],
          },
        }),
      );
    // The flush commits once a first statement has answered and before a second one starts, if there is one.
    let first: Promise<unknown> | undefined;
    const flushingBeforeTheSecond = {
      $queryRaw: (...args: Parameters<typeof db.prisma.$queryRaw>) => {
        // Promise.resolve: Prisma runs a statement when its promise is first awaited, once.
        if (!first) return (first = Promise.resolve(db.prisma.$queryRaw(...args)));
        return first.then(flush).then(() => db.prisma.$queryRaw(...args));
      },
    } as Pick<typeof db.prisma, "$queryRaw">;

    const before = (await accessTokenUsageOf(flushingBeforeTheSecond, [tokenId])).get(tokenId)!;
    // One statement: the read came before the flush, whole.
    expect(before).toEqual({ clients: [], operations: [] });

    await flush();
    const after = (await accessTokenUsageOf(db.prisma, [tokenId])).get(tokenId)!;
    expect(after.clients).toEqual([expect.objectContaining({ ip: "10.0.0.7", userAgent: "datahub-cli" })]);
    expect(after.operations).toEqual([{ operation: "me", count: 1 }]);
  });
});
