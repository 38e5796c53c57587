/**
 * Two gateway processes (and an evaluation worker) on one PostgreSQL and Redis, as in a scaled deployment: a
 * revocation (one token, or all of a user's at once) or a policy change made through one is enforced by the other
 * within a second; each receives the results of its own evaluations. Their logs, at the most verbose level, never hold
 * a token. (Its users and documents: test/support/replicas.ts.)
 */
import { createTestDatabase } from "@mdp/db/testing";
import {
  freePort,
  startService,
  queuePrefix,
  waitForOutput,
  waitUntilReady,
  type RunningService,
} from "../support/services";
import { ROOT, ALICE, system, graphql, msUntil } from "../support/replicas";

describe("two gateway replicas", () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  let a: RunningService;
  let b: RunningService;
  let worker: RunningService;
  let urlA: string;
  let urlB: string;
  const issuedTokens: string[] = [];

  beforeAll(async () => {
    db = await createTestDatabase("e2e_replicas");
    const env = {
      DATABASE_URL: db.url,
      REDIS_URL: process.env.REDIS_URL ?? "redis://127.0.0.1:6379",
      QUEUE_PREFIX: queuePrefix("e2e-replicas"),
      LOG_LEVEL: "trace",
    };
    const [portA, portB] = [await freePort(), await freePort()];
    urlA = `http://127.0.0.1:${portA}`;
    urlB = `http://127.0.0.1:${portB}`;
    a = startService("gateway", { ...env, PORT: String(portA) });
    b = startService("gateway", { ...env, PORT: String(portB) });
    worker = startService("evaluation-worker", env);
    await Promise.all([waitUntilReady(urlA, a), waitUntilReady(urlB, b), waitForOutput(worker, "worker running")]);
  });

  afterAll(async () => {
    await Promise.all([a?.stop(), b?.stop(), worker?.stop()]);
    await db?.drop();
  });

  async function createToken(baseUrl: string, actorUrn: string, headers: Record<string, string>) {
    const res = await graphql(
      baseUrl,
      `
        mutation ($i: GetAccessTokenInput!) {
          createAccessToken(input: $i) {
            accessToken
            metadata {
              id
            }
          }
        }
      `,
      { i: { type: "PERSONAL", actorUrn, duration: "ONE_HOUR", name: "replica test" } },
      headers,
    );
    const created = res.data?.createAccessToken as { accessToken: string; metadata: { id: string } };
    issuedTokens.push(created.accessToken);
    return created;
  }

  it("enforces a revocation made through one replica on the other within 1 s", async () => {
    const { accessToken, metadata } = await createToken(urlA, ALICE, system(ROOT));
    const bearer = { authorization: `Bearer ${accessToken}` };
    // B verifies (and caches) the token first.
    expect(
      (
        await graphql(
          urlB,
          `
            {
              me {
                urn
              }
            }
          `,
          {},
          bearer,
        )
      ).status,
    ).toBe(200);

    const revokedAt = Date.now();
    const revoke = await graphql(urlA, `mutation { revokeAccessToken(tokenId: "${metadata.id}") }`, {}, system(ROOT));
    expect(revoke.data).toEqual({ revokeAccessToken: true });
    const ms = await msUntil(
      revokedAt,
      async () =>
        (
          await graphql(
            urlB,
            `
              {
                me {
                  urn
                }
              }
            `,
            {},
            bearer,
          )
        ).status === 401,
    );
    expect(ms).toBeLessThan(1000);
  });

  it("enforces a bulk revocation (revokeAccessTokens) made through one replica on the other within 1 s", async () => {
    const user = "urn:li:corpuser:bulk-replicas";
    const tokens = [
      await createToken(urlA, user, system(ROOT)),
      await createToken(urlA, user, system(ROOT)),
      await createToken(urlA, user, system(ROOT)),
    ];
    const meOnB = (token: string) =>
      graphql(
        urlB,
        `
          {
            me {
              urn
            }
          }
        `,
        {},
        { authorization: `Bearer ${token}` },
      );
    // B verifies (and caches) every one of them first.
    for (const t of tokens) expect((await meOnB(t.accessToken)).status).toBe(200);

    const revokedAt = Date.now();
    const revoke = await graphql(
      urlA,
      `
        mutation ($a: String!) {
          revokeAccessTokens(actorUrn: $a)
        }
      `,
      { a: user },
      system(ROOT),
    );
    expect(revoke.data).toEqual({ revokeAccessTokens: 3 });
    const ms = await msUntil(revokedAt, async () =>
      (await Promise.all(tokens.map((t) => meOnB(t.accessToken)))).every((r) => r.status === 401),
    );
    expect(ms).toBeLessThan(1000);
  });

  it("enforces a policy change made through one replica on the other within 1 s", async () => {
    const policy = await graphql(
      urlA,
      `
        mutation ($i: PolicyUpdateInput!) {
          createPolicy(input: $i)
        }
      `,
      {
        i: {
          name: "alice tokens",
          state: "ACTIVE",
          privileges: ["GENERATE_PERSONAL_ACCESS_TOKENS"],
          actors: { users: [ALICE] },
        },
      },
      system(ROOT),
    );
    const policyUrn = policy.data?.createPolicy as string;
    const listOwn = () =>
      graphql(
        urlB,
        `{ listAccessTokens(input: {filters: [{field: "actorUrn", value: "${ALICE}"}]}) { total } }`,
        {},
        system(ALICE),
      );
    await msUntil(Date.now(), async () => (await listOwn()).errors === undefined);

    const changedAt = Date.now();
    await graphql(
      urlA,
      `
        mutation ($u: String!, $i: PolicyUpdateInput!) {
          updatePolicy(urn: $u, input: $i)
        }
      `,
      {
        u: policyUrn,
        i: {
          name: "alice tokens",
          state: "INACTIVE",
          privileges: ["GENERATE_PERSONAL_ACCESS_TOKENS"],
          actors: { users: [ALICE] },
        },
      },
      system(ROOT),
    );
    const ms = await msUntil(changedAt, async () => (await listOwn()).errors?.[0]?.extensions?.code === "FORBIDDEN");
    expect(ms).toBeLessThan(1000);
  });

  it("enforces a group membership change on the other replica within 1 s", async () => {
    const group = await graphql(
      urlA,
      `
        mutation {
          createGroup(input: { id: "token-users", name: "Token users" })
        }
      `,
      {},
      system(ROOT),
    );
    const groupUrn = group.data?.createGroup as string;
    await graphql(
      urlA,
      `
        mutation ($i: PolicyUpdateInput!) {
          createPolicy(input: $i)
        }
      `,
      {
        i: {
          name: "group tokens",
          state: "ACTIVE",
          privileges: ["GENERATE_PERSONAL_ACCESS_TOKENS"],
          actors: { groups: [groupUrn] },
        },
      },
      system(ROOT),
    );
    const members = `mutation($i: GroupMembersInput!) { m: %s(input: $i) }`;
    await graphql(urlA, members.replace("%s", "addGroupMembers"), { i: { groupUrn, userUrns: [ALICE] } }, system(ROOT));
    const me = async () =>
      (
        await graphql(
          urlB,
          `
            {
              me {
                privileges
              }
            }
          `,
          {},
          system(ALICE),
        )
      ).data?.me as { privileges: string[] };
    await msUntil(Date.now(), async () => (await me()).privileges.includes("GENERATE_PERSONAL_ACCESS_TOKENS"));

    const changedAt = Date.now();
    await graphql(
      urlA,
      members.replace("%s", "removeGroupMembers"),
      { i: { groupUrn, userUrns: [ALICE] } },
      system(ROOT),
    );
    const ms = await msUntil(
      changedAt,
      async () => !(await me()).privileges.includes("GENERATE_PERSONAL_ACCESS_TOKENS"),
    );
    expect(ms).toBeLessThan(1000);
  });

  it("gives each replica the results of its own evaluations when both evaluate at once", async () => {
    const post = async (baseUrl: string, path: string, body: unknown) => {
      const res = await fetch(`${baseUrl}${path}`, {
        method: "POST",
        headers: { "content-type": "application/json", ...system(ROOT) },
        body: JSON.stringify(body),
      });
      return { status: res.status, body: (await res.json()) as { value?: Record<string, unknown> } };
    };
    const urns = Array.from({ length: 12 }, (_, i) => `urn:li:dataset:(urn:li:dataPlatform:hive,db.t${i},PROD)`);
    const proposals = urns.map((urn, i) => ({
      entityType: "dataset",
      entityUrn: urn,
      aspectName: "datasetProperties",
      changeType: "UPSERT",
      // every other entity has a description, so the answers differ from one entity to the next
      aspect: { contentType: "application/json", value: JSON.stringify(i % 2 ? {} : { description: `t${i}` }) },
    }));
    expect((await post(urlA, "/gms/aspects?action=ingestProposalBatch", { proposals })).status).toBe(200);
    const created = await graphql(
      urlB,
      `
        mutation ($input: CreateTestInput!) {
          createTest(input: $input)
        }
      `,
      {
        input: {
          id: "replicas-described",
          name: "Has a description",
          category: "Documentation",
          definition: {
            json: '{"on": {"types": ["dataset"]}, "rules": {"property": "datasetProperties.description", "operator": "exists"}}',
          },
        },
      },
      system(ROOT),
    );
    expect(created.data).toEqual({ createTest: "urn:li:test:replicas-described" });

    const answers = await Promise.all(
      urns.map((urn, i) => post(i % 2 ? urlB : urlA, "/gms/test?action=evaluate", { urn })),
    );
    answers.forEach((answer, i) => {
      const passed = i % 2 === 0;
      expect(answer).toMatchObject({
        status: 200,
        body: { value: { urn: urns[i], passing: passed ? [{ test: "urn:li:test:replicas-described" }] : [] } },
      });
      expect((answer.body.value!.failing as unknown[]).length).toBe(passed ? 0 : 1);
    });
  });

  it("never writes a token to the logs of a create/use/revoke cycle, even at trace level", async () => {
    const { accessToken, metadata } = await createToken(urlB, ROOT, system(ROOT));
    const bearer = { authorization: `Bearer ${accessToken}` };
    await graphql(
      urlA,
      `
        {
          me {
            urn
          }
        }
      `,
      {},
      bearer,
    );
    await graphql(
      urlA,
      `
        query ($t: String!) {
          getAccessTokenMetadata(token: $t) {
            id
          }
        }
      `,
      { t: accessToken },
      bearer,
    );
    // A query sent over GET would put the token in the URL: refused, and the URL logged without its query.
    const overGet = await fetch(
      `${urlA}/api/graphql?query=${encodeURIComponent(`{ getAccessTokenMetadata(token: "${accessToken}") { id } }`)}`,
      { headers: { ...bearer, "apollo-require-preflight": "1" } },
    );
    expect(overGet.status).toBe(405);
    // Paths match whatever their case: so does what the log hides, and the error's GraphQL shape.
    const overGetMixedCase = await fetch(
      `${urlA}/API/GraphQL?query=${encodeURIComponent(`{ getAccessTokenMetadata(token: "${accessToken}") { id } }`)}`,
      { headers: { ...bearer, "apollo-require-preflight": "1" } },
    );
    expect(overGetMixedCase.status).toBe(405);
    expect(await overGetMixedCase.json()).toEqual({
      errors: [
        {
          message: "GraphQL is served over POST only.",
          extensions: { code: "BAD_USER_INPUT", type: "BAD_REQUEST", datahubCode: 400 },
        },
      ],
    });
    await graphql(urlB, `mutation { revokeAccessToken(tokenId: "${metadata.id}") }`, {}, bearer);
    await graphql(
      urlA,
      `
        {
          me {
            urn
          }
        }
      `,
      {},
      bearer,
    ); // refused, and logged as such

    const logs = a.output() + b.output();
    expect(logs).toContain(metadata.id); // the logs do record the operations...
    for (const token of issuedTokens) {
      expect(logs).not.toContain(token); // ...but no token, nor its signature, anywhere
      expect(logs).not.toContain(token.split(".")[2]!);
    }
  });
});
