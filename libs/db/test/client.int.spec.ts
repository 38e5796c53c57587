/** The client factory on a migrated test database, imported the way services import the package. */
import {
  AccessTokenType,
  createPrismaClient,
  isUniqueViolation,
  PolicyState,
  type PrismaClient,
  TaskState,
} from "@mdp/db";
import { createTestDatabase, type TestDatabase } from "@mdp/db/testing";

describe("createPrismaClient", () => {
  let db: TestDatabase;
  let prisma: PrismaClient;
  beforeAll(async () => {
    db = await createTestDatabase("client");
    prisma = createPrismaClient(db.url, { poolMax: 2 });
  });
  afterAll(async () => {
    await prisma.$disconnect();
    await db.drop();
  });

  it("reads and writes every kind of column the schema uses", async () => {
    const token = await prisma.accessToken.create({
      data: {
        id: "6f1c1c1e-8a4e-4d6a-9a55-0a8f5f4b7e01",
        name: "ci",
        actorUrn: "urn:li:corpuser:ci",
        ownerUrn: "urn:li:corpuser:admin",
        tokenHash: "a".repeat(64),
      },
    });
    expect(token).toMatchObject({ type: AccessTokenType.PERSONAL, expiresAt: null });
    expect(token.createdAt).toBeInstanceOf(Date);

    await prisma.group.create({
      data: { urn: "urn:li:corpGroup:eng", name: "eng", members: { create: [{ userUrn: "urn:li:corpuser:ci" }] } },
    });
    await prisma.group.delete({ where: { urn: "urn:li:corpGroup:eng" } });
    await expect(prisma.groupMember.count()).resolves.toBe(0); // ON DELETE CASCADE

    const policy = await prisma.policy.create({
      data: {
        urn: "urn:li:dataHubPolicy:1",
        name: "p",
        state: PolicyState.ACTIVE,
        privileges: ["VIEW"],
        users: [],
        groups: [],
      },
    });
    expect(policy).toMatchObject({ allUsers: false, editable: true, privileges: ["VIEW"] });

    const task = await prisma.task.create({
      data: { id: "t1", type: "TRUNCATE_TIMESERIES", request: { days: 30 }, createdBy: "urn:li:corpuser:ci" },
    });
    expect(task).toMatchObject({ state: TaskState.waiting, progress: {}, attemptsMade: 0 });

    const event = await prisma.auditEvent.create({ data: { actorUrn: "urn:li:corpuser:ci", action: "test" } });
    expect(typeof event.id).toBe("bigint");
  });

  it("recognizes a unique violation, also inside an interactive transaction", async () => {
    await prisma.group.create({ data: { urn: "urn:li:corpGroup:dup", name: "dup" } });
    const error = await prisma
      .$transaction((tx) => tx.group.create({ data: { urn: "urn:li:corpGroup:dup", name: "again" } }))
      .catch((e: unknown) => e);
    expect(isUniqueViolation(error)).toBe(true);
    expect(isUniqueViolation(new Error("other"))).toBe(false);
  });

  it("gives each test database its own data", async () => {
    const other = await createTestDatabase("client_other");
    const otherClient = createPrismaClient(other.url);
    try {
      await expect(otherClient.accessToken.count()).resolves.toBe(0);
      await expect(prisma.accessToken.count()).resolves.toBe(1);
    } finally {
      await otherClient.$disconnect();
      await other.drop();
    }
  });
});
