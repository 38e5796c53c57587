/**
 * Revocation against the real gateway (PostgreSQL, Redis): revoking an access token (one, all of a user's, those
 * outside the duration policy, a family on reuse detection, an idle one, or an ancestor of the token) suspends the
 * scheduled tests, on-change tests and retention policies and turns off the webhook subscriptions last set through it,
 * in its transaction, visibly and audited, and nobody else's work; expiry alone stops nothing; suspended work is resumed
 * by whoever holds what it needs (docs/authorization.md "Deferred work", "Incident response").
 */
import { SYSTEM_ACTOR_URN } from "@mdp/core";
import { eventually } from "@mdp/core/testing";
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
import {
  IDLE_DAYS,
  WORKER_PRIVILEGES,
  CREATE_TEST,
  TEST,
  CREATE_POLICY,
  POLICY,
  CREATE_HOOK,
  HOOKS,
  REVOKE,
  REVOKE_ALL,
  ROTATE,
  ME,
  Work,
  Standing,
} from "./support/incident-response";

describe("revocation stops the work set through a token", () => {
  let h: Harness;
  let made = 0;
  const root = systemClientHeaders(ROOT);

  const gql = async (query: string, variables: Record<string, unknown>, headers = root): Promise<GraphQLBody> =>
    (await h.graphql(query, variables, headers)).body;
  const ok = async <T>(field: string, query: string, variables: Record<string, unknown>, headers = root) => {
    const body = await gql(query, variables, headers);
    if (body.errors) throw new Error(JSON.stringify(body.errors));
    return body.data![field] as T;
  };
  const definition = JSON.stringify({
    on: { types: ["dataset"] },
    rules: { property: "datasetProperties.description", operator: "exists" },
  });

  /** Sets one of each kind of deferred work through `headers` (a bearer token), for `owner`. */
  async function setWork(owner: string, headers: Record<string, string>): Promise<Work> {
    const id = `work-${++made}`;
    const scheduled = await ok<string>(
      "createTest",
      CREATE_TEST,
      {
        i: {
          id: `${id}-scheduled`,
          name: id,
          category: "c",
          definition: { json: definition },
          schedule: { cron: "0 5 * * *" },
          evaluateOnChange: false,
        },
      },
      headers,
    );
    const onChange = await ok<string>(
      "createTest",
      CREATE_TEST,
      { i: { id: `${id}-on-change`, name: id, category: "c", definition: { json: definition } } },
      headers,
    );
    const policy = (
      await ok<{ urn: string }>(
        "createRetentionPolicy",
        CREATE_POLICY,
        { i: { entityType: "dataset", aspect: "datasetProfile", retainDays: 30, cron: "0 5 * * *" } },
        headers,
      )
    ).urn;
    const webhook = (
      await ok<{ subscription: { id: string } }>(
        "createWebhookSubscription",
        CREATE_HOOK,
        { i: { url: `https://hooks.example/${id}`, eventTypes: ["EntityChangeEvent_v1"] } },
        headers,
      )
    ).subscription.id;
    return { owner, scheduled, onChange, policy, webhook };
  }

  /** Each piece as its readers see it: suspensions on the tests and the policy, the subscription turned off. */
  async function standing(work: Work) {
    const hooks = await ok<{ subscriptions: Array<{ id: string; active: boolean; disabledReason: string | null }> }>(
      "listWebhookSubscriptions",
      HOOKS,
      { o: work.owner },
    );
    const hook = hooks.subscriptions.find((s) => s.id === work.webhook)!;
    const plain = (s: Standing) => ({ suspendedAt: s.suspendedAt, suspendedReason: s.suspendedReason });
    return {
      scheduled: plain(await ok<Standing>("test", TEST, { u: work.scheduled })),
      onChange: plain(await ok<Standing>("test", TEST, { u: work.onChange })),
      policy: plain(await ok<Standing>("retentionPolicy", POLICY, { u: work.policy })),
      webhook: { active: hook.active, disabledReason: hook.disabledReason },
    };
  }
  const running = {
    scheduled: { suspendedAt: null, suspendedReason: null },
    onChange: { suspendedAt: null, suspendedReason: null },
    policy: { suspendedAt: null, suspendedReason: null },
    webhook: { active: true, disabledReason: null },
  };
  const stoppedWith = (reason: string) => ({
    scheduled: { suspendedAt: expect.any(Number), suspendedReason: reason },
    onChange: { suspendedAt: expect.any(Number), suspendedReason: reason },
    policy: { suspendedAt: expect.any(Number), suspendedReason: reason },
    webhook: { active: false, disabledReason: reason },
  });
  const webhookUrn = (id: string) => `urn:li:webhookSubscription:${id}`;
  /** The audit rows of the work's suspensions, one per piece, as `action target: actor trigger revoked via`. */
  async function suspensionRows(work: Work) {
    const rows = await h.prisma.auditEvent.findMany({
      where: {
        action: { in: ["test.schedule.suspended", "retentionPolicy.suspended", "webhook.disabled"] },
        targetUrn: { in: [work.scheduled, work.onChange, work.policy, webhookUrn(work.webhook)] },
      },
      orderBy: { id: "asc" },
    });
    // Sorted: the rows of one kind written in one statement come in no particular order.
    return rows
      .map((r) => {
        const d = r.details as Record<string, unknown>;
        return `${r.action} ${r.targetUrn}: ${r.actorUrn} ${String(d.trigger)} ${String(d.revokedTokenId)} ${String(d.viaTokenId)}`;
      })
      .sort();
  }
  const expectedRows = (work: Work, actor: string, trigger: string, revoked: string, via = revoked) =>
    [
      `test.schedule.suspended ${work.scheduled}: ${actor} ${trigger} ${revoked} ${via}`,
      `test.schedule.suspended ${work.onChange}: ${actor} ${trigger} ${revoked} ${via}`,
      `retentionPolicy.suspended ${work.policy}: ${actor} ${trigger} ${revoked} ${via}`,
      `webhook.disabled ${webhookUrn(work.webhook)}: ${actor} ${trigger} ${revoked} ${via}`,
    ].sort();
  const user = async (name: string, privileges = WORKER_PRIVILEGES) => {
    const urn = `urn:li:corpuser:ir-${name}`;
    await grant(h, urn, privileges);
    return urn;
  };

  beforeAll(async () => {
    h = await startGateway({ ACCESS_TOKEN_IDLE_REVOKE_DAYS: String(IDLE_DAYS) });
  });
  afterAll(async () => {
    await h?.close();
  });

  it("revokeAccessToken stops what was set through that token, nothing else, and a holder resumes it", async () => {
    const owner = await user("direct");
    const other = await user("direct-other");
    const revoked = await createToken(h, owner);
    const kept = await createToken(h, owner);
    const otherToken = await createToken(h, other);
    const doomed = await setWork(owner, bearer(revoked.token));
    const spared = await setWork(owner, bearer(kept.token));
    const othersWork = await setWork(other, bearer(otherToken.token));

    // The owner revokes the token itself, with another of its own.
    expect(await ok("revokeAccessToken", REVOKE, { t: revoked.id }, bearer(kept.token))).toBe(true);
    const reason = `revokeAccessToken by ${owner}: it was set through access token ${revoked.id}, which was revoked`;
    expect(await standing(doomed)).toEqual(stoppedWith(reason));
    expect(await suspensionRows(doomed)).toEqual(expectedRows(doomed, owner, "revokeAccessToken", revoked.id));
    // Its other token's work, and another user's, go on.
    expect(await standing(spared)).toEqual(running);
    expect(await standing(othersWork)).toEqual(running);
    expect(await suspensionRows(spared)).toEqual([]);

    // Resumed by whoever holds what it needs (here the owner, through its live token), who owns it from then on.
    const as = bearer(kept.token);
    await ok(
      "resumeTestSchedule",
      `mutation($u: String!) { resumeTestSchedule(urn: $u) }`,
      { u: doomed.scheduled },
      as,
    );
    await ok("resumeTestSchedule", `mutation($u: String!) { resumeTestSchedule(urn: $u) }`, { u: doomed.onChange }, as);
    await ok(
      "resumeRetentionPolicy",
      `mutation($u: String!) { resumeRetentionPolicy(urn: $u) { urn } }`,
      { u: doomed.policy },
      as,
    );
    await ok(
      "updateWebhookSubscription",
      `mutation($i: UpdateWebhookSubscriptionInput!) { updateWebhookSubscription(input: $i) { id } }`,
      { i: { id: doomed.webhook, active: true } },
      as,
    );
    expect(await standing(doomed)).toEqual(running);
    // Resuming made the token in use the one the work runs through; revoking the old one again stops nothing.
    expect(await h.prisma.metadataTest.findUniqueOrThrow({ where: { urn: doomed.scheduled } })).toMatchObject({
      ownerUrn: owner,
      ownerTokenId: kept.id,
    });
    expect(await ok("revokeAccessToken", REVOKE, { t: revoked.id }, as)).toBe(true);
    expect(await standing(doomed)).toEqual(running);
  });

  it("revokeAccessTokens and revokeAccessTokensOutsidePolicy stop what was set through the tokens they revoke", async () => {
    const all = await user("all");
    const token = await createToken(h, all);
    const work = await setWork(all, bearer(token.token));
    expect(await ok("revokeAccessTokens", REVOKE_ALL, { u: all })).toBe(1);
    expect(await standing(work)).toEqual(
      stoppedWith(`revokeAccessTokens by ${ROOT}: it was set through access token ${token.id}, which was revoked`),
    );
    expect(await suspensionRows(work)).toEqual(expectedRows(work, ROOT, "revokeAccessTokens", token.id));

    const outside = await user("outside");
    const odd = await createToken(h, outside);
    const oddWork = await setWork(outside, bearer(odd.token));
    // A lifetime the policy does not allow (two days and a bit, as an earlier policy might have).
    await h.database.pool.query(
      `UPDATE access_token SET expires_at = date_trunc('second', created_at) + interval '2 days 17 seconds'
        WHERE id = $1::uuid`,
      [odd.id],
    );
    expect(
      await ok<string[]>("revokeAccessTokensOutsidePolicy", `mutation { revokeAccessTokensOutsidePolicy }`, {}),
    ).toEqual([odd.id]);
    expect(await standing(oddWork)).toEqual(
      stoppedWith(
        `revokeAccessTokensOutsidePolicy by ${ROOT}: it was set through access token ${odd.id}, which was revoked`,
      ),
    );
    expect(await suspensionRows(oddWork)).toEqual(
      expectedRows(oddWork, ROOT, "revokeAccessTokensOutsidePolicy", odd.id),
    );
  });

  it("reuse detection stops what was set through any token of the family it revokes", async () => {
    const rotating = await user("rotating");
    const first = await createToken(h, rotating);
    const before = await setWork(rotating, bearer(first.token));
    // The token rotates itself (no grace window): its successor sets more work.
    const successor = await ok<{ accessToken: string; metadata: { id: string } }>(
      "rotateAccessToken",
      ROTATE,
      { t: first.id },
      bearer(first.token),
    );
    const after = await setWork(rotating, bearer(successor.accessToken));
    // The rotated-out token is used again: its family is revoked by the system actor, in the answer's transaction.
    const reused = await h.graphql(ME, {}, bearer(first.token));
    expect(reused.status).toBe(401);
    const cause = `reuse of access token ${first.id} after its rotation's grace window (suspected theft) revoked its family`;
    expect(await standing(after)).toEqual(
      stoppedWith(`${cause}: it was set through access token ${successor.metadata.id}, which was revoked`),
    );
    expect(await standing(before)).toEqual(
      stoppedWith(`${cause}: it was set through access token ${first.id}, which was revoked`),
    );
    expect(await suspensionRows(after)).toEqual(
      expectedRows(after, SYSTEM_ACTOR_URN, "reuseDetected", successor.metadata.id),
    );
  });

  it("revoking a token stops what was set through a token created with it, another user's too", async () => {
    // A manager mints, with its own token, a token for a user, who sets work through it.
    const manager = await user("manager", [...WORKER_PRIVILEGES, "MANAGE_ACCESS_TOKENS"]);
    const worker = await user("chained-worker");
    // Each shorter-lived than the token it is created with: one of the same duration created a second later would
    // outlive it, which is refused.
    const managerToken = await createToken(h, manager, undefined, { duration: "ONE_WEEK" });
    const child = await createToken(h, worker, bearer(managerToken.token), { duration: "ONE_DAY" });
    const grandchild = await createToken(h, worker, bearer(child.token), { duration: "ONE_HOUR" });
    const viaChild = await setWork(worker, bearer(child.token));
    const viaGrandchild = await setWork(worker, bearer(grandchild.token));
    const own = await setWork(manager, bearer(managerToken.token));

    expect(await ok("revokeAccessToken", REVOKE, { t: managerToken.id })).toBe(true);
    // Their tokens are refused with it (docs/authorization.md "Tokens"): the work they set stops with them.
    expect((await h.graphql(ME, {}, bearer(child.token))).status).toBe(401);
    const reason = (via: string) =>
      `revokeAccessToken by ${ROOT}: it was set through access token ${via}, created with access token ` +
      `${managerToken.id}, which was revoked`;
    expect(await standing(viaChild)).toEqual(stoppedWith(reason(child.id)));
    expect(await standing(viaGrandchild)).toEqual(stoppedWith(reason(grandchild.id)));
    expect(await standing(own)).toEqual(
      stoppedWith(
        `revokeAccessToken by ${ROOT}: it was set through access token ${managerToken.id}, which was revoked`,
      ),
    );
    expect(await suspensionRows(viaGrandchild)).toEqual(
      expectedRows(viaGrandchild, ROOT, "revokeAccessToken", managerToken.id, grandchild.id),
    );
  });

  it("the idle-token chore stops what was set through the tokens it revokes", async () => {
    const idle = await user("idle");
    const token = await createToken(h, idle);
    const work = await setWork(idle, bearer(token.token));
    // Every use of the token is written (the last one last), then the token is made to look unused for too long.
    const lastUse = Date.now();
    await ok("me", ME, {}, bearer(token.token));
    await eventually("the last use written", async () => {
      const row = await h.prisma.accessToken.findUniqueOrThrow({ where: { id: token.id } });
      return row.lastUsedAt !== null && row.lastUsedAt.getTime() >= lastUse;
    });
    await h.database.pool.query(
      `UPDATE access_token SET created_at = now() - make_interval(days => $2), last_used_at = now() - make_interval(days => $2)
        WHERE id = $1::uuid`,
      [token.id, IDLE_DAYS + 1],
    );
    await h.services.tokenUsage.revokeIdle();
    expect(await standing(work)).toEqual(
      stoppedWith(
        `idle access tokens revoked after ${IDLE_DAYS} days unused (ACCESS_TOKEN_IDLE_REVOKE_DAYS): it was set ` +
          `through access token ${token.id}, which was revoked`,
      ),
    );
    expect(await suspensionRows(work)).toEqual(expectedRows(work, SYSTEM_ACTOR_URN, "idle", token.id));
  });

  it("expiry alone stops nothing: an expired token's work goes on through the revocation of the user's live tokens", async () => {
    const expiring = await user("expiring");
    const token = await createToken(h, expiring);
    const live = await createToken(h, expiring);
    const work = await setWork(expiring, bearer(token.token));
    await h.database.pool.query(
      `UPDATE access_token SET expires_at = now() - interval '1 second' WHERE id = $1::uuid`,
      [token.id],
    );
    await h.services.tokenUsage.revokeIdle();
    expect(await ok("revokeAccessTokens", REVOKE_ALL, { u: expiring })).toBe(1); // the live one only
    expect(await h.prisma.accessToken.findUniqueOrThrow({ where: { id: live.id } })).toMatchObject({
      revokedAt: expect.any(Date),
    });
    expect(await standing(work)).toEqual(running);
    expect(await suspensionRows(work)).toEqual([]);
  });
});
