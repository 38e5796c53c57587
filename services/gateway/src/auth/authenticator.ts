import type { IncomingHttpHeaders } from "node:http";
import { badInput, parseUrnField, unauthenticated, forbidden, SYSTEM_ACTOR_URN, type Config } from "@mdp/core";
import type { Actor } from "./actor";
import { matcherFor } from "./constant-time";

export const ACTOR_HEADER = "x-platform-actor";
/**
 * DataHub's name of the same header (its system client's delegated actor): for the system client it names the user
 * as X-Platform-Actor does; beside a bearer token it is held to the same rule (the token's own actor, or 403), so it
 * never lets a token act for anyone else. Not read in the development header mode (AUTH_ENABLED=false).
 */
export const DATAHUB_ACTOR_HEADER = "x-datahub-actor";

/** Verifies a bearer access token and returns its actor, or throws UNAUTHENTICATED with the reason. */
export type TokenVerifier = (token: string) => Promise<Actor>;

/**
 * Establishes the Actor of a request: bearer token; system client (Basic) acting for X-Platform-Actor, or for the
 * system actor when it names nobody; or, with AUTH_ENABLED=false, the header alone.
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
    const authorization = single(headers.authorization);
    if (!authorization) {
      const devActor = single(headers[ACTOR_HEADER]);
      if (!this.config.AUTH_ENABLED && devActor) return { urn: this.userUrn(devActor), via: "header" };
      throw unauthenticated("Request is missing 'Authorization' header.");
    }
    const actorHeader = actorHeaderOf(headers);
    const trimmed = authorization.trim();
    const space = trimmed.indexOf(" ");
    const scheme = (space > 0 ? trimmed.slice(0, space) : trimmed).toLowerCase();
    const credentials = space > 0 ? trimmed.slice(space + 1).trim() : "";
    if (scheme === "bearer" && credentials) {
      const actor = await this.verifyToken(credentials);
      // A header that names no user is bad input (400 naming it) whoever sends it; only a well-formed other user is
      // the contradiction the contract answers with 403.
      if (actorHeader) this.userUrn(actorHeader.value, actorHeader.name);
      if (actorHeader && actorHeader.value !== actor.urn) {
        throw forbidden(`${actorHeader.name} '${actorHeader.value}' does not match the actor of the access token`);
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

  private systemClient(credentials: string, actorHeader: { name: string; value: string } | undefined): Actor {
    // RFC 7617 sends base64("id:secret"); DataHub's clients send "id:secret" as it is (DataHubSystemAuthenticator
    // splits the raw text). A colon is not in base64's alphabet, so each form is told apart without guessing.
    const decoded = credentials.includes(":") ? credentials : Buffer.from(credentials, "base64").toString("utf8");
    const colon = decoded.indexOf(":");
    const id = colon >= 0 ? decoded.slice(0, colon) : decoded;
    const secret = colon >= 0 ? decoded.slice(colon + 1) : "";
    // Both comparisons always run so timing does not tell which part was wrong.
    const idOk = this.isSystemClientId(id);
    const secretOk = this.isSystemClientSecret(secret);
    if (!(idOk && secretOk)) throw unauthenticated("Invalid system client credentials.");
    // Naming nobody, it acts for itself, as DataHub's system client does (its SDK and datahub-gc send no actor
    // header): as the system actor, whose privileges are its policies' (the built-in root policy holds it) and whose
    // urn its audit rows name.
    if (!actorHeader) return { urn: SYSTEM_ACTOR_URN, via: "system" };
    return { urn: this.userUrn(actorHeader.value, actorHeader.name), via: "system" };
  }

  private userUrn(value: string, header = ACTOR_HEADER): string {
    parseUrnField(header, value, "corpuser");
    return value;
  }
}

/**
 * The actor header of a request with credentials: X-Platform-Actor or DataHub's X-DataHub-Actor, which mean the same;
 * both at once must name the same user (400 otherwise: which one was meant cannot be told).
 */
function actorHeaderOf(headers: IncomingHttpHeaders): { name: string; value: string } | undefined {
  const platform = single(headers[ACTOR_HEADER]);
  const datahub = single(headers[DATAHUB_ACTOR_HEADER]);
  if (platform !== undefined && datahub !== undefined && platform !== datahub) {
    throw badInput(`${ACTOR_HEADER} and ${DATAHUB_ACTOR_HEADER} name different users; send one of them`);
  }
  if (platform !== undefined) return { name: ACTOR_HEADER, value: platform };
  if (datahub !== undefined) return { name: DATAHUB_ACTOR_HEADER, value: datahub };
  return undefined;
}

function single(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}
