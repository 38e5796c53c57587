/**
 * revokeActorAccess against the real gateway (PostgreSQL, Redis): of the root user or the system actor it is the root
 * user's and the system client's alone, and a user's revocation leaves the work of the users it minted personal tokens
 * for alone (docs/authorization.md "Incident response").
 */
import { DEVELOPMENT_SECRETS, SYSTEM_ACTOR_URN } from "@mdp/core";
import {
  ROOT,
  bearer,
  createToken,
  grant,
  startGateway,
  systemClientHeaders,
  type GraphQLBody,
  type Harness,
} from "./support/gateway-harness";
import { CREATE_HOOK, REVOKE_ACTOR, ME } from "./support/incident-response";

describe("revokeActorAccess", () => {
  let h: Harness;
  const root = systemClientHeaders(ROOT);
  /** The system client acting as itself, the system actor: no X-Platform-Actor. */
  const systemClient = {
    authorization: `Basic ${Buffer.from(`${DEVELOPMENT_SECRETS.SYSTEM_CLIENT_ID}:${DEVELOPMENT_SECRETS.SYSTEM_CLIENT_SECRET}`).toString("base64")}`,
  };
  const MANAGER = "urn:li:corpuser:ir-access-manager";
  const USER = "urn:li:corpuser:ir-minted-for";
  const PRIVILEGES = ["MANAGE_TESTS", "MANAGE_SYSTEM_OPERATIONS", "GENERATE_PERSONAL_ACCESS_TOKENS"];

  const gql = async (query: string, variables: Record<string, unknown>, headers = root): Promise<GraphQLBody> =>
    (await h.graphql(query, variables, headers)).body;

  beforeAll(async () => {
    h = await startGateway();
    await grant(h, MANAGER, [...PRIVILEGES, "MANAGE_ACCESS_TOKENS"]);
    await grant(h, USER, PRIVILEGES);
  });
  afterAll(async () => {
    await h?.close();
  });

  it("of the root user or the system actor is refused to a MANAGE_ACCESS_TOKENS holder: nothing is revoked", async () => {
    const rootToken = await createToken(h, ROOT);
    for (const headers of [systemClientHeaders(MANAGER), bearer((await createToken(h, MANAGER)).token)]) {
      for (const [target, what] of [
        [ROOT, "the root user"],
        [SYSTEM_ACTOR_URN, "the system actor"],
      ] as const) {
        const refused = await h.graphql(REVOKE_ACTOR, { u: target }, headers);
        expect(refused.status).toBe(200);
        expect(refused.body.errors?.[0]).toMatchObject({
          extensions: { code: "FORBIDDEN" },
          message: `${MANAGER} is unauthorized to revoke the access of ${target}, ${what}: only the root user and the system client may.`,
        });
      }
    }
    expect((await h.graphql(ME, {}, bearer(rootToken.token))).status).toBe(200);
    expect(await h.prisma.auditEvent.count({ where: { action: "actor.revokeAccess" } })).toBe(0);
  });

  it("a user's revocation leaves alone the work of a user it minted a personal token for", async () => {
    // The manager mints a personal token for the user (who acts through it, bounded by the manager at every use).
    const minted = await createToken(h, USER, systemClientHeaders(MANAGER));
    const as = bearer(minted.token);
    const definition = JSON.stringify({ on: { types: ["dataset"] }, rules: { property: "urn", operator: "exists" } });
    const created = await gql(
      `mutation($i: CreateTestInput!) { createTest(input: $i) }`,
      {
        i: {
          id: "minted-for",
          name: "n",
          category: "c",
          definition: { json: definition },
          schedule: { cron: "0 6 * * *" },
        },
      },
      as,
    );
    expect(created.errors).toBeUndefined();
    const policy = await gql(
      `mutation($i: CreateRetentionPolicyInput!) { createRetentionPolicy(input: $i) { urn } }`,
      { i: { entityType: "dataset", aspect: "datasetProfile", retainDays: 30, cron: "0 6 * * *" } },
      as,
    );
    expect(policy.errors).toBeUndefined();
    const hook = await gql(
      CREATE_HOOK,
      { i: { url: "https://hooks.example/minted", eventTypes: ["MetadataChangeLog_v1"] } },
      as,
    );
    expect(hook.errors).toBeUndefined();

    const answer = await gql(REVOKE_ACTOR, { u: MANAGER });
    expect(answer.errors).toBeUndefined();
    const { revokedTokenIds, suspendedWork } = answer.data!.revokeActorAccess as {
      revokedTokenIds: string[];
      suspendedWork: Array<{ ownerUrn: string }>;
    };
    expect(revokedTokenIds).not.toContain(minted.id);
    expect(suspendedWork.filter((w) => w.ownerUrn === USER)).toEqual([]);
    expect(await h.prisma.metadataTest.findUniqueOrThrow({ where: { urn: "urn:li:test:minted-for" } })).toMatchObject({
      ownerUrn: USER,
      suspendedAt: null,
    });
    expect(await h.prisma.retentionPolicy.findMany({ where: { ownerUrn: USER } })).toEqual([
      expect.objectContaining({ suspendedAt: null }),
    ]);
    expect(await h.prisma.webhookSubscription.findMany({ where: { ownerUrn: USER } })).toEqual([
      expect.objectContaining({ active: true, disabledReason: null }),
    ]);
    // The token itself goes on, bounded by its minter's privileges at every use.
    expect((await h.graphql(ME, {}, as)).status).toBe(200);
  });

  it("of the system actor and of the root user is the root user's and the system client's to do", async () => {
    const byRoot = await gql(REVOKE_ACTOR, { u: SYSTEM_ACTOR_URN });
    expect(byRoot.errors).toBeUndefined();
    const rootToken = await createToken(h, ROOT);
    const bySystem = await gql(REVOKE_ACTOR, { u: ROOT }, systemClient);
    expect(bySystem.errors).toBeUndefined();
    expect((bySystem.data!.revokeActorAccess as { revokedTokenIds: string[] }).revokedTokenIds).toContain(rootToken.id);
    // The root user, with its own token, on itself.
    const own = await createToken(h, ROOT);
    const byItself = await gql(REVOKE_ACTOR, { u: ROOT }, bearer(own.token));
    expect(byItself.errors).toBeUndefined();
    const rows = await h.prisma.auditEvent.findMany({
      where: { action: "actor.revokeAccess" },
      orderBy: { id: "asc" },
    });
    expect(rows.map((r) => [r.actorUrn, r.targetUrn])).toEqual([
      [ROOT, MANAGER],
      [ROOT, SYSTEM_ACTOR_URN],
      [SYSTEM_ACTOR_URN, ROOT],
      [ROOT, ROOT],
    ]);
  });
});
