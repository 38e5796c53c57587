import { randomUUID } from "node:crypto";
import type { Router } from "express";
import { z } from "zod";
import { abbreviated, badInput, forbidden, parseUrnField, SYSTEM_ACTOR_URN, type Config } from "@mdp/core";
import { actorOf } from "../auth/auth.middleware";
import type { Actor } from "../auth/actor";
import { parseBody } from "../shared/validate";
import { Hs256 } from "./jwt";
import { SERVICE_ACCOUNT_URN_PREFIX } from "./service-account-urn";
import { hashToken } from "./token-hash";
import { TOKEN_ISSUER, TOKEN_VERSION } from "./token.service";
import type { TokenStore } from "./token.store";

/** Where DataHub's frontend asks GMS for a signed-in user's session (datahub-frontend's AuthServiceClient). */
export const SESSION_TOKEN_PATH = "/auth/generateSessionTokenForUser";
/** What a session token is called where tokens have names (the audit trail, getAccessTokenMetadata). */
export const SESSION_TOKEN_NAME = "session";
/** DataHub's users: its frontend sends a user's id, and GMS makes it `urn:li:corpuser:<id>` (CorpuserUrn). */
const USER_URN_PREFIX = "urn:li:corpuser:";

/** The body DataHub's frontend sends: `{"userId": "<the user's id, not its urn>"}`. */
const sessionRequest = z.strictObject({ userId: z.string().min(1, { error: "must name the user signing in" }) });

/**
 * Sessions, as DataHub's GMS mints them for its frontend (AuthServiceController.generateSessionTokenForUser): a token
 * of type SESSION for the user signing in, living SESSION_TOKEN_DURATION_MS (DataHub's
 * authentication.sessionTokenDurationMs). Only the system client may ask: it is the frontend, which has checked the
 * user's password or its identity provider's answer. Unlike DataHub's stateless session tokens, each is stored (as a
 * salted hash, like every token), so revoking a user's tokens (revokeAccessTokens, revokeActorAccess) ends its
 * sessions on every replica within 1 s; it is never listed among the personal access tokens.
 */
export class SessionTokens {
  private readonly jwt: Hs256;

  constructor(
    private readonly store: Pick<TokenStore, "insert" | "urnOf" | "isServiceAccount">,
    private readonly config: Pick<Config, "TOKEN_SIGNING_KEY" | "TOKEN_SALT" | "SESSION_TOKEN_DURATION_MS">,
  ) {
    this.jwt = new Hs256(config.TOKEN_SIGNING_KEY);
  }

  async mint(caller: Actor, body: unknown): Promise<{ accessToken: string }> {
    // Whoever else asks learns nothing from the body: refused before it is read.
    if (caller.via !== "system") {
      throw forbidden(
        `${caller.urn} is unauthorized to generate session tokens: only the system client (DataHub's frontend, ` +
          `with SYSTEM_CLIENT_ID and SYSTEM_CLIENT_SECRET) signs users in.`,
      );
    }
    const { userId } = parseBody(sessionRequest, body);
    const userUrn = `${USER_URN_PREFIX}${userId}`;
    // The urn's parse bounds the id's length and form, and names the field.
    try {
      parseUrnField("userId", userUrn, "corpuser");
    } catch {
      throw badInput(`userId '${abbreviated(userId)}' is not a user id: urn:li:corpuser:<userId> must be a user urn`);
    }
    if (userUrn === SYSTEM_ACTOR_URN) {
      throw badInput(
        `userId ${userId} is the system actor, the system client's own identity: it does not sign in (the system ` +
          `client authenticates with its credentials)`,
      );
    }
    if (userUrn.startsWith(SERVICE_ACCOUNT_URN_PREFIX) && (await this.store.isServiceAccount(userUrn))) {
      throw badInput(
        `userId ${userId} is a service account: service accounts act through SERVICE_ACCOUNT tokens, they do not ` +
          `sign in`,
      );
    }
    const createdAt = Date.now();
    const issuedAt = Math.floor(createdAt / 1000);
    const exp = issuedAt + Math.floor(this.config.SESSION_TOKEN_DURATION_MS / 1000);
    const id = randomUUID();
    const accessToken = this.jwt.sign({
      sub: userUrn,
      jti: id,
      type: "SESSION",
      iat: issuedAt,
      iss: TOKEN_ISSUER,
      ver: TOKEN_VERSION,
      exp,
    });
    await this.store.insert({
      type: "SESSION",
      // The user's own: it acts for the user and no other principal bounds it (no minter, no parent).
      metadata: {
        urn: this.store.urnOf(id),
        id,
        name: SESSION_TOKEN_NAME,
        description: null,
        actorUrn: userUrn,
        ownerUrn: userUrn,
        createdAt,
        expiresAt: exp * 1000,
        lastUsedAt: null,
        scopes: null,
        parentTokenId: null,
      },
      tokenHash: hashToken(accessToken, this.config.TOKEN_SALT),
      exp,
      audit: {
        actorUrn: caller.urn,
        details: {
          name: SESSION_TOKEN_NAME,
          type: "SESSION",
          actorUrn: userUrn,
          durationMs: this.config.SESSION_TOKEN_DURATION_MS,
          via: caller.via,
        },
      },
    });
    return { accessToken };
  }
}

/**
 * `POST /auth/generateSessionTokenForUser` (under /gms and /api/gms too), as DataHub's GMS serves it: `{userId}` →
 * `{accessToken}`, the whole body. Not in the OpenAPI document: its one client is DataHub's frontend, through the
 * system client (docs/datahub-clients.md).
 */
export function addSessionRoute(router: Router, sessions: SessionTokens): void {
  router.post(SESSION_TOKEN_PATH, async (req, res) => {
    res.json(await sessions.mint(actorOf(res.locals), req.body));
  });
}
