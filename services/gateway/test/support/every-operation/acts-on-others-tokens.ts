/** The seventh principal's rows (others-context.ts's `OthersRow`) on tokens and the work they carry. */
import { bearer, createToken, grant, ROOT, systemClientHeaders } from "../gateway-harness";
import { CREATE, tokenInput } from "./principals";
import { expectBoundedByCaller, OWNER, ROTATE, testOf, type OthersRow } from "./others-context";

export const TOKEN_ROWS: OthersRow[] = [
  // Tokens
  {
    operation: "Mutation.rotateAccessToken",
    use: "another user's token that would outlive the caller's",
    holds: ["MANAGE_ACCESS_TOKENS"],
    async run(c) {
      const theirs = await createToken(c.h, `${c.caller.urn}-rotated`, systemClientHeaders(ROOT), {
        duration: "ONE_WEEK",
      });
      const res = await c.gql(ROTATE, { t: theirs.id }, c.caller.headers);
      const callers = await c.h.prisma.accessToken.findUniqueOrThrow({ where: { id: c.caller.token.id } });
      expect(res.outcome).toBe("BAD_REQUEST");
      expect(res.detail).toContain(callers.expiresAt!.toISOString());
    },
  },
  {
    operation: "Mutation.rotateAccessToken",
    use: "another user's token",
    holds: ["MANAGE_ACCESS_TOKENS"],
    async run(c) {
      const user = `${c.caller.urn}-rotated`;
      const theirs = await createToken(c.h, user, systemClientHeaders(ROOT), { duration: "ONE_HOUR" });
      const res = await c.gql(
        `mutation($t: String!) { rotateAccessToken(tokenId: $t) { accessToken metadata { id } } }`,
        { t: theirs.id },
        c.caller.headers,
      );
      expect(res.detail).toBe("ok");
      const successor = res.data!.rotateAccessToken as { accessToken: string; metadata: { id: string } };
      await expectBoundedByCaller(c, successor.metadata.id);
      // What its user is granted later reaches it only within what the caller holds; it goes with the caller's token.
      await grant(c.h, user, ["MANAGE_POLICIES"]);
      const policies = await c.gql(`{ listPolicies(input: {}) { total } }`, {}, bearer(successor.accessToken));
      expect(policies.outcome).toBe("FORBIDDEN");
      await c.gql(
        `mutation($t: String!) { revokeAccessToken(tokenId: $t) }`,
        { t: c.caller.token.id },
        c.caller.headers,
      );
      const me = await c.gql(`{ me { urn } }`, {}, bearer(successor.accessToken));
      expect(me.outcome).toBe("UNAUTHENTICATED");
    },
  },
  {
    operation: "Mutation.rotateAccessToken",
    use: "another token of the caller's own",
    holds: ["GENERATE_PERSONAL_ACCESS_TOKENS"],
    async run(c) {
      const other = await createToken(c.h, c.caller.urn, systemClientHeaders(ROOT), { duration: "ONE_HOUR" });
      const res = await c.gql(ROTATE, { t: other.id }, c.caller.headers);
      expect(res.detail).toBe("ok");
      await expectBoundedByCaller(c, (res.data!.rotateAccessToken as { metadata: { id: string } }).metadata.id);
    },
  },
  ...(
    [
      ["MANAGE_ACCESS_TOKENS", false],
      ["MANAGE_SERVICE_ACCOUNTS", true],
    ] as const
  ).map(([holds, may]): OthersRow => ({
    operation: "Mutation.rotateAccessToken",
    use: `a service account's token, holding ${holds}`,
    holds: [holds],
    async run(c) {
      const root = systemClientHeaders(ROOT);
      const created = await c.gql(`mutation { createServiceAccount(input: {}) { urn } }`, {}, root);
      const account = (created.data!.createServiceAccount as { urn: string }).urn;
      const theirs = await createToken(c.h, account, root, { type: "SERVICE_ACCOUNT", duration: "ONE_HOUR" });
      const res = await c.gql(ROTATE, { t: theirs.id }, c.caller.headers);
      if (!may) {
        expect(res.outcome).toBe("FORBIDDEN");
        return;
      }
      expect(res.detail).toBe("ok");
      await expectBoundedByCaller(c, (res.data!.rotateAccessToken as { metadata: { id: string } }).metadata.id);
    },
  })),
  {
    operation: "Mutation.createAccessToken",
    use: "for a user who holds more than the caller",
    holds: ["MANAGE_ACCESS_TOKENS"],
    async run(c) {
      const res = await c.gql(CREATE, { i: tokenInput(OWNER) }, c.caller.headers);
      expect(res.outcome).toBe("FORBIDDEN");
    },
  },
  {
    operation: "Mutation.revokeAccessToken",
    use: "another user's token",
    holds: ["MANAGE_ACCESS_TOKENS"],
    async run(c) {
      // OWNER set a scheduled test through the token: revoking it stops that work, visibly.
      const owners = await createToken(c.h, OWNER);
      const test = await c.ownersTest({ schedule: { cron: "0 3 * * *" } }, bearer(owners.token));
      const res = await c.gql(
        `mutation($t: String!) { revokeAccessToken(tokenId: $t) }`,
        { t: owners.id },
        c.caller.headers,
      );
      expect(res.detail).toBe("ok");
      const row = await c.h.prisma.accessToken.findUniqueOrThrow({ where: { id: owners.id } });
      expect(row.revokedBy).toBe(c.caller.urn);
      expect((await testOf(c.h, test)).suspendedAt).not.toBeNull();
    },
  },
  {
    operation: "Mutation.revokeAccessTokens",
    use: "of another user",
    holds: ["MANAGE_ACCESS_TOKENS"],
    async run(c) {
      const user = "urn:li:corpuser:matrix-others-revoked";
      const token = await createToken(c.h, user);
      const res = await c.gql(
        `mutation($u: String!) { revokeAccessTokens(actorUrn: $u) }`,
        { u: user },
        c.caller.headers,
      );
      expect(res.detail).toBe("ok");
      expect((await c.h.prisma.accessToken.findUniqueOrThrow({ where: { id: token.id } })).revokedBy).toBe(
        c.caller.urn,
      );
    },
  },
  {
    operation: "Mutation.revokeAccessToken",
    use: "a token of the root user",
    holds: ["MANAGE_ACCESS_TOKENS"],
    async run(c) {
      const roots = await createToken(c.h, ROOT);
      const res = await c.gql(
        `mutation($t: String!) { revokeAccessToken(tokenId: $t) }`,
        { t: roots.id },
        c.caller.headers,
      );
      expect(res.outcome).toBe("FORBIDDEN");
      expect((await c.h.prisma.accessToken.findUniqueOrThrow({ where: { id: roots.id } })).revokedAt).toBeNull();
    },
  },
  {
    operation: "Mutation.revokeAccessTokens",
    use: "of the root user",
    holds: ["MANAGE_ACCESS_TOKENS"],
    async run(c) {
      const roots = await createToken(c.h, ROOT);
      const res = await c.gql(
        `mutation($u: String!) { revokeAccessTokens(actorUrn: $u) }`,
        { u: ROOT },
        c.caller.headers,
      );
      expect(res.outcome).toBe("FORBIDDEN");
      expect((await c.h.prisma.accessToken.findUniqueOrThrow({ where: { id: roots.id } })).revokedAt).toBeNull();
    },
  },
  {
    operation: "Mutation.revokeActorAccess",
    use: "of the root user",
    holds: ["MANAGE_ACCESS_TOKENS"],
    async run(c) {
      const res = await c.gql(
        `mutation($u: String!) { revokeActorAccess(input: {actorUrn: $u}) { revokedTokenIds } }`,
        { u: ROOT },
        c.caller.headers,
      );
      expect(res.outcome).toBe("FORBIDDEN");
    },
  },
  {
    operation: "Mutation.revokeActorAccess",
    use: "of the system actor",
    holds: ["MANAGE_ACCESS_TOKENS"],
    async run(c) {
      const res = await c.gql(
        `mutation($u: String!) { revokeActorAccess(input: {actorUrn: $u}) { revokedTokenIds } }`,
        { u: "urn:li:corpuser:__datahub_system" },
        c.caller.headers,
      );
      expect(res.outcome).toBe("FORBIDDEN");
    },
  },
  {
    operation: "Mutation.revokeActorAccess",
    use: "of a user who minted another user's token",
    holds: ["MANAGE_ACCESS_TOKENS"],
    async run(c) {
      // A manager mints a user a token (through the system client, so no token of the manager's is its parent), with
      // which the user sets up a scheduled test: the user's work, not the manager's.
      const manager = "urn:li:corpuser:matrix-others-manager";
      const user = `${c.caller.urn}-minted-for`;
      await grant(c.h, manager, ["MANAGE_ACCESS_TOKENS", "MANAGE_TESTS"]);
      await grant(c.h, user, ["MANAGE_TESTS"]);
      const minted = await createToken(c.h, user, systemClientHeaders(manager));
      const test = await c.ownersTest({ schedule: { cron: "0 3 * * *" } }, bearer(minted.token));
      const res = await c.gql(
        `mutation($u: String!) { revokeActorAccess(input: {actorUrn: $u}) { revokedTokenIds } }`,
        { u: manager },
        c.caller.headers,
      );
      expect(res.detail).toBe("ok");
      expect((await testOf(c.h, test)).suspendedAt).toBeNull();
    },
  },
];
