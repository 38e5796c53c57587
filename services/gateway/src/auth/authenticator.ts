import type { IncomingHttpHeaders } from "node:http";
import { parseUrnField, unauthenticated, forbidden, type Config } from "@mdp/core";
import type { Actor } from "./actor";
import { matcherFor } from "./constant-time";

export const ACTOR_HEADER = "x-platform-actor";

/** Verifies a bearer access token and returns its actor, or throws UNAUTHENTICATED with the reason. */
export type TokenVerifier = (token: string) => Promise<Actor>;

/**
 * Establishes the Actor of a request (CONTRACT.md "Authentication"):
 * bearer token; system client (Basic) acting for X-Platform-Actor; or, with AUTH_ENABLED=false, the header alone.
 */
export class Authenticator {
  private readonly isSystemClientId: (given: string) => boolean;
  private readonly isSystemClientSecret: (given: string) => boolean;

  constructor(
    private readonly config: Pick<Config, "AUTH_ENABLED" | "SYSTEM_CLIENT_ID" | "SYSTEM_CLIENT_SECRET">,
    private readonly verifyToken: TokenVerifier,
  ) {
    this.isSystemClientId = matcherFor(config.SYSTEM_CLIENT_ID);
    this.isSystemClientSecret = matcherFor(config.SYSTEM_CLIENT_SECRET);
  }

  async authenticate(headers: IncomingHttpHeaders): Promise<Actor> {
    const actorHeader = single(headers[ACTOR_HEADER]);
    const authorization = single(headers.authorization);
    if (!authorization) {
      if (!this.config.AUTH_ENABLED && actorHeader) return { urn: this.userUrn(actorHeader), via: "header" };
      throw unauthenticated("Request is missing 'Authorization' header.");
    }
    const trimmed = authorization.trim();
    const space = trimmed.indexOf(" ");
    const scheme = (space > 0 ? trimmed.slice(0, space) : trimmed).toLowerCase();
    const credentials = space > 0 ? trimmed.slice(space + 1).trim() : "";
    if (scheme === "bearer" && credentials) {
      const actor = await this.verifyToken(credentials);
      // A header that names no user is bad input (400 naming it) whoever sends it; only a well-formed other user is
      // the contradiction the contract answers with 403.
      if (actorHeader) this.userUrn(actorHeader);
      if (actorHeader && actorHeader !== actor.urn) {
        throw forbidden(`${ACTOR_HEADER} '${actorHeader}' does not match the actor of the access token`);
      }
      return actor;
    }
    if (scheme === "basic" && credentials) return this.systemClient(credentials, actorHeader);
    if (scheme === "bearer" || scheme === "basic") {
      // "Bearer $TOKEN" with TOKEN unset: the scheme is right, the token is missing.
      const named = scheme === "basic" ? "Basic" : "Bearer";
      throw unauthenticated(`The Authorization header names the ${named} scheme but holds no credentials after it.`);
    }
    throw unauthenticated("Authorization header must use the Bearer or Basic scheme.");
  }

  private systemClient(credentials: string, actorHeader: string | undefined): Actor {
    const decoded = Buffer.from(credentials, "base64").toString("utf8");
    const colon = decoded.indexOf(":");
    const id = colon >= 0 ? decoded.slice(0, colon) : decoded;
    const secret = colon >= 0 ? decoded.slice(colon + 1) : "";
    // Both comparisons always run so timing does not tell which part was wrong.
    const idOk = this.isSystemClientId(id);
    const secretOk = this.isSystemClientSecret(secret);
    if (!(idOk && secretOk)) throw unauthenticated("Invalid system client credentials.");
    if (!actorHeader) throw unauthenticated(`System client requests must name the user in the ${ACTOR_HEADER} header.`);
    return { urn: this.userUrn(actorHeader), via: "system" };
  }

  private userUrn(value: string): string {
    parseUrnField(ACTOR_HEADER, value, "corpuser");
    return value;
  }
}

function single(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}
