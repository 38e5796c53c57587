import type { InvalidationBus, Invalidation } from "../events/invalidation-bus";
import { Hs256 } from "./jwt";
import { tokenDigest } from "./token-hash";
import type { TokenCredential } from "./token.store";
import { TokenVerifier } from "./token.verifier";

const config = { TOKEN_SIGNING_KEY: "a-signing-key-for-the-verifier-spec", TOKEN_SALT: "salt" };
const ALICE = "urn:li:corpuser:alice";
const BOB = "urn:li:corpuser:bob";
const PARENT = "00000000-0000-4000-8000-000000000001";
const CHILD = "00000000-0000-4000-8000-000000000002";

/** A bus that is always live and delivers what the test sends it. */
function fakeBus() {
  const handlers: Array<(event: Invalidation) => void> = [];
  const bus = {
    onInvalidation: (handler: (event: Invalidation) => void) => handlers.push(handler),
    onReset: () => undefined,
    isLive: () => true,
    publish: async () => undefined,
  };
  return {
    bus: bus as unknown as InvalidationBus,
    deliver: (event: Invalidation) => handlers.forEach((h) => h(event)),
  };
}

describe("TokenVerifier's chains", () => {
  const exp = Math.floor(Date.now() / 1000) + 3600;
  const child = new Hs256(config.TOKEN_SIGNING_KEY).sign({
    sub: ALICE,
    jti: CHILD,
    type: "PERSONAL",
    iat: exp - 3600,
    exp,
    iss: "metadata-admin",
    ver: 2,
  });
  let rows: Map<string, TokenCredential>;
  let loads: string[];
  let verifier: TokenVerifier;
  let deliver: (event: Invalidation) => void;

  beforeEach(() => {
    rows = new Map<string, TokenCredential>([
      [
        PARENT,
        {
          type: "PERSONAL",
          tokenHash: Buffer.alloc(32),
          actorUrn: BOB,
          ownerUrn: BOB,
          revoked: false,
          expiresAt: (exp + 60) * 1000,
          scopes: ["MANAGE_ACCESS_TOKENS"],
          parentTokenId: null,
          rotatedAt: null,
          familyId: null,
        },
      ],
      [
        CHILD,
        {
          type: "PERSONAL",
          tokenHash: tokenDigest(child, config.TOKEN_SALT),
          actorUrn: ALICE,
          ownerUrn: BOB,
          revoked: false,
          expiresAt: exp * 1000,
          scopes: undefined,
          parentTokenId: PARENT,
          rotatedAt: null,
          familyId: null,
        },
      ],
    ]);
    loads = [];
    const store = {
      credentialOf: async (id: string) => {
        loads.push(id);
        const row = rows.get(id);
        return row ? { ...row } : null;
      },
    };
    const fake = fakeBus();
    deliver = fake.deliver;
    verifier = new TokenVerifier(store, fake.bus, { used: () => undefined }, config);
  });

  it("builds the chain (minter, parent with its scopes, expiry) and reads each row from PostgreSQL once", async () => {
    const expected = {
      urn: ALICE,
      via: "token",
      tokenId: CHILD,
      minterUrn: BOB,
      parent: { urn: BOB, tokenId: PARENT, scopes: ["MANAGE_ACCESS_TOKENS"] },
      tokenExpiresAt: exp * 1000,
    };
    expect(await verifier.verify(child)).toEqual(expected);
    expect(await verifier.verify(child)).toEqual(expected);
    expect(await verifier.verify(child)).toEqual(expected);
    expect(loads).toEqual([CHILD, PARENT]);
  });

  it("refuses the child at its next use once its parent's revocation is announced, reading only the parent again", async () => {
    await verifier.verify(child);
    rows.get(PARENT)!.revoked = true;
    deliver({ kind: "token-revoked", tokenId: PARENT });
    await expect(verifier.verify(child)).rejects.toMatchObject({
      code: "UNAUTHENTICATED",
      message: `Token has been revoked: the access token it was created with (${PARENT}) is revoked.`,
    });
    expect(loads).toEqual([CHILD, PARENT, PARENT]);
  });

  it("does the same when every token of the parent's user is revoked", async () => {
    await verifier.verify(child);
    rows.get(PARENT)!.revoked = true;
    deliver({ kind: "actor-tokens-revoked", actorUrn: BOB });
    await expect(verifier.verify(child)).rejects.toMatchObject({ code: "UNAUTHENTICATED" });
  });
});
