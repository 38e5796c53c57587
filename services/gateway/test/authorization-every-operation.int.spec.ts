/**
 * The authorization matrix of the delegated-authority model (docs/authorization.md): every GraphQL operation and every
 * HTTP action, each called by six kinds of principal measured against the privilege the operation needs (P):
 *
 * - a user holding no privilege;
 * - a user holding P, with its own token;
 * - a user holding P, with a token scoped without it;
 * - a token minted (by a holder of MANAGE_ACCESS_TOKENS only) for a user who was granted P afterwards;
 * - a child token minted with a shorter-lived token of its user that is scoped without P;
 * - a user who held P when it set up scheduled work, and has lost it since.
 *
 * Only the holder may act (or whoever holds P through the chain: a token's minter, a parent's scopes). The list of rows
 * is compared with the schema the gateway serves and the HTTP routes it mounts, so an operation added without a row
 * fails here.
 *
 * The seventh principal, acting on an object another user owns, is authorization-acts-on-others.int.spec.ts; the rows
 * are in support/every-operation/.
 */
import { isDeepStrictEqual } from "node:util";
import { createLogger, withImplied, type Privilege } from "@mdp/core";
import { closeRedis, createRedis, Producer, RateLimits, ScheduleSyncRequests } from "@mdp/queues";
import { fireSchedule, scheduledTestKind } from "@mdp/schedules";
import { TaskLifecycle } from "@mdp/tasks";
import { bearer, createToken, ROOT, systemClientHeaders, type Harness } from "./support/gateway-harness";
import { startMatrix, type Matrix } from "./support/every-operation/matrix-harness";
import { MINTER, SYSTEM_CLIENT, testInput, type Caller } from "./support/every-operation/principals";
import { ROWS, servedOperations } from "./support/every-operation/rows";

const KINDS = [
  "holding no privilege",
  "holding it, with its own token",
  "holding it, with a token scoped without it",
  "with a token minted for it before it was granted it",
  "with a child of a shorter-lived token scoped without it",
  "the owner of scheduled work, since it lost it",
] as const;
type Kind = (typeof KINDS)[number];

/** A scope that neither is nor implies `p`: what the scoped tokens are limited to. */
const scopeWithout = (p: Privilege): Privilege =>
  p === "GET_TIMESERIES_ASPECT" ? "GET_ENTITY" : "GET_TIMESERIES_ASPECT";
const MINTER_HOLDS = withImplied(["MANAGE_ACCESS_TOKENS"]);
/** What a child's parent token is scoped to: enough to mint the child, and P's scope-without. */
const parentScopes = (p: Privilege): Privilege[] => ["GENERATE_PERSONAL_ACCESS_TOKENS", scopeWithout(p)];

/** Whether a caller of this kind may use `needs` (everyone may use what needs nothing). */
function allowed(kind: Kind, needs: Privilege | null | typeof SYSTEM_CLIENT): boolean {
  if (needs === null) return true;
  if (needs === SYSTEM_CLIENT) return false;
  switch (kind) {
    case "holding it, with its own token":
      return true;
    case "with a token minted for it before it was granted it":
      return MINTER_HOLDS.has(needs);
    case "with a child of a shorter-lived token scoped without it":
      return withImplied(parentScopes(needs)).has(needs);
    case "holding no privilege":
    case "holding it, with a token scoped without it":
    case "the owner of scheduled work, since it lost it":
      return false;
  }
}

describe("authorization matrix: every operation, every kind of principal", () => {
  let m: Matrix;
  let h: Harness;
  const root = systemClientHeaders(ROOT);
  const callers = new Map<string, Caller>();
  const asRoot = <T>(query: string, variables?: Record<string, unknown>) => m.asRoot<T>(query, variables);
  const grantPolicy = (user: string, privileges: string[]) => m.grantPolicy(user, privileges);

  /** The caller of `kind` for privilege `p` (null: the one holding nothing), set up on first use. */
  async function callerFor(kind: Kind, p: Privilege | null): Promise<Caller> {
    // One caller holding nothing per kind: rows that need nothing still write (subscriptions, budgeted per actor).
    const key = kind === "holding no privilege" || p === null ? `${kind}/nothing` : `${kind}/${p}`;
    const known = callers.get(key);
    if (known) return known;
    const slug = `${KINDS.indexOf(kind)}-${(p ?? "none").toLowerCase().replaceAll("_", "-")}`;
    const urn = `urn:li:corpuser:matrix-${slug}`;
    let caller: Caller;
    if (kind === "holding no privilege" || p === null) {
      caller = { urn, headers: bearer((await createToken(h, urn)).token) };
    } else if (kind === "holding it, with its own token") {
      await grantPolicy(urn, [p]);
      caller = { urn, headers: bearer((await createToken(h, urn)).token) };
    } else if (kind === "holding it, with a token scoped without it") {
      await grantPolicy(urn, [p, scopeWithout(p)]);
      caller = { urn, headers: bearer((await createToken(h, urn, root, { scopes: [scopeWithout(p)] })).token) };
    } else if (kind === "with a token minted for it before it was granted it") {
      const minter = bearer((await createToken(h, MINTER)).token);
      const minted = await createToken(h, urn, minter);
      await grantPolicy(urn, [p]);
      caller = { urn, headers: bearer(minted.token) };
    } else if (kind === "with a child of a shorter-lived token scoped without it") {
      await grantPolicy(urn, [p, ...parentScopes(p)]);
      const parent = await createToken(h, urn, root, { duration: "ONE_DAY", scopes: parentScopes(p) });
      const child = await createToken(h, urn, bearer(parent.token), { duration: "ONE_HOUR" });
      caller = { urn, headers: bearer(child.token) };
    } else {
      // Sets up a scheduled test while it holds P and MANAGE_TESTS, then loses both.
      const policy = await grantPolicy(urn, [p, "MANAGE_TESTS"]);
      const headers = bearer((await createToken(h, urn)).token);
      const created = await h.graphql(
        `mutation($i: CreateTestInput!) { createTest(input: $i) }`,
        { i: testInput("0 3 * * *") },
        headers,
      );
      expect(created.body.errors).toBeUndefined();
      await asRoot(`mutation($u: String!) { deletePolicy(urn: $u) }`, { u: policy });
      caller = { urn, headers };
    }
    callers.set(key, caller);
    return caller;
  }

  beforeAll(async () => {
    m = await startMatrix();
    h = m.h;
  });
  afterAll(async () => {
    await m?.close();
  });

  it("has a row for every operation the gateway serves, and none for one it does not", async () => {
    const rows = [...new Set(ROWS.map((r) => r.operation))].sort();
    const served = await servedOperations();
    expect({
      missing: served.filter((o) => !rows.includes(o)),
      unknown: rows.filter((o) => !served.includes(o)),
    }).toEqual({
      missing: [],
      unknown: [],
    });
    expect(isDeepStrictEqual(rows, served)).toBe(true);
  });

  describe.each(KINDS)("a caller %s", (kind) => {
    it.each(ROWS.map((r) => [`${r.operation}${r.use ? ` (${r.use})` : ""}`, r] as const))("%s", async (_name, row) => {
      const caller = await callerFor(kind, row.needs === SYSTEM_CLIENT ? null : row.needs);
      const result = await row.call(h, caller, m.fixtures);
      if (allowed(kind, row.needs)) {
        expect({
          refused: result.outcome === "FORBIDDEN" || result.outcome === "UNAUTHENTICATED",
          detail: result.detail,
        }).toEqual({
          refused: false,
          detail: expect.any(String),
        });
      } else {
        expect({ outcome: result.outcome, detail: result.detail }).toEqual({
          outcome: "FORBIDDEN",
          detail: expect.any(String),
        });
      }
    });
  });

  it("suspends, at its next firing, the scheduled work of every owner who lost what it needs", async () => {
    const owners = [...callers.entries()].filter(
      ([key]) => key.startsWith("the owner of scheduled work") && !key.endsWith("/nothing"),
    );
    expect(owners.length).toBeGreaterThan(0);
    const logger = createLogger("matrix-firings", h.config.LOG_LEVEL);
    const connection = createRedis(h.config.REDIS_URL, "producer");
    const rateLimits = new RateLimits(RateLimits.connect(h.config, logger), h.config);
    try {
      const deps = {
        db: h.database,
        tasks: new TaskLifecycle(h.database, logger),
        producers: { evaluate: new Producer("evaluate", connection, h.config.QUEUE_PREFIX) },
        sync: new ScheduleSyncRequests(new Producer("scheduleSync", connection, h.config.QUEUE_PREFIX)),
        logger,
        urnNamespace: h.config.URN_NAMESPACE,
        rootUserUrn: h.config.ROOT_USER_URN,
        rateLimits,
      };
      for (const [, owner] of owners) {
        const test = await h.prisma.metadataTest.findFirstOrThrow({ where: { ownerUrn: owner.urn } });
        expect(await fireSchedule(scheduledTestKind, test.urn, deps)).toEqual({ suspended: ["MANAGE_TESTS"] });
        expect(await h.prisma.task.count({ where: { createdBy: owner.urn } })).toBe(0);
      }
    } finally {
      await rateLimits.close();
      await closeRedis(connection);
    }
  });
});
