/**
 * The two gateway replicas the token chain tests run against (token-chains-*.int.spec.ts), on one database, Redis and
 * queue prefix, started in beforeAll and closed in afterAll, and the token-minting helpers those tests call. Call it
 * once inside a describe; `gateway` and `replica` are set by the time the tests run.
 */
import { ROOT, startGateway, systemClientHeaders, type Harness } from "./gateway-harness";
import { CREATE, type Created, errorOf } from "./token-chains";

export function startTokenChainsHarness() {
  const input = (actorUrn: string, more: Record<string, unknown> = {}) => ({
    i: { type: "PERSONAL", actorUrn, duration: "ONE_HOUR", name: "chained", ...more },
  });
  /** createAccessToken as `headers`; the token, or the refusal */
  const create = async (headers: Record<string, string>, actorUrn: string, more: Record<string, unknown> = {}) => {
    const res = await tc.gateway.graphql(CREATE, input(actorUrn, more), headers);
    return {
      created: (res.body.data?.createAccessToken ?? undefined) as Created | undefined,
      error: errorOf(res.body),
    };
  };
  const tc = {
    // Set in beforeAll below, before any test reads them.
    gateway: undefined as unknown as Harness,
    /** a second replica on the same database, Redis and prefix */
    replica: undefined as unknown as Harness,
    asRoot: systemClientHeaders(ROOT),
    input,
    create,
    /** create's token, throwing on a refusal */
    mint: async (headers: Record<string, string>, actorUrn: string, more: Record<string, unknown> = {}) => {
      const { created, error } = await create(headers, actorUrn, more);
      if (!created) throw new Error(JSON.stringify(error));
      return created;
    },
  };

  beforeAll(async () => {
    tc.gateway = await startGateway({ ACCESS_TOKEN_ALLOW_NO_EXPIRY: "true" });
    tc.replica = await startGateway({
      DATABASE_URL: tc.gateway.config.DATABASE_URL,
      QUEUE_PREFIX: tc.gateway.config.QUEUE_PREFIX,
      ACCESS_TOKEN_ALLOW_NO_EXPIRY: "true",
    });
  });
  afterAll(async () => {
    await tc.replica?.close();
    await tc.gateway?.close();
  });
  return tc;
}
