import { createHmac, timingSafeEqual } from "node:crypto";

/**
 * HS256 JSON Web Tokens with node:crypto. A general JOSE library verifies in 100–150 µs here, a bare HMAC in a few;
 * this runs on every authenticated request, and HS256 with a fixed header is all the contract needs, so the few lines
 * are ours. Only the header we issue is accepted, which also rules out `alg: none` and algorithm confusion.
 */
export interface AccessTokenClaims {
  /** the actor urn */
  sub: string;
  /** the token id */
  jti: string;
  /** SESSION: a signed-in user's (POST /auth/generateSessionTokenForUser) */
  type: "PERSONAL" | "SERVICE_ACCOUNT" | "SESSION";
  /** seconds since the epoch; absent = never expires */
  exp?: number;
  iat: number;
  iss: string;
  ver: number;
}

const HEADER = base64url(JSON.stringify({ alg: "HS256", typ: "JWT" }));

export class JwtError extends Error {}

export class Hs256 {
  constructor(private readonly key: string) {}

  sign(claims: AccessTokenClaims): string {
    const signingInput = `${HEADER}.${base64url(JSON.stringify(claims))}`;
    return `${signingInput}.${this.signature(signingInput).toString("base64url")}`;
  }

  /** Checks the signature and shape; expiry is the caller's to judge (it wants its own message for it). */
  verify(token: string): AccessTokenClaims {
    const parts = token.split(".");
    if (parts.length !== 3 || parts[0] !== HEADER) throw new JwtError("malformed token");
    const [header, payload, signature] = parts as [string, string, string];
    const expected = this.signature(`${header}.${payload}`);
    const given = Buffer.from(signature, "base64url");
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw new JwtError("bad signature");
    let claims: unknown;
    try {
      claims = JSON.parse(Buffer.from(payload, "base64url").toString("utf8"));
    } catch {
      throw new JwtError("malformed claims");
    }
    if (!isClaims(claims)) throw new JwtError("malformed claims");
    return claims;
  }

  private signature(input: string): Buffer {
    return createHmac("sha256", this.key).update(input).digest();
  }
}

function base64url(text: string): string {
  return Buffer.from(text, "utf8").toString("base64url");
}

function isClaims(value: unknown): value is AccessTokenClaims {
  const c = value as Partial<AccessTokenClaims> | null;
  return (
    typeof c === "object" &&
    c !== null &&
    typeof c.sub === "string" &&
    typeof c.jti === "string" &&
    (c.type === "PERSONAL" || c.type === "SERVICE_ACCOUNT" || c.type === "SESSION") &&
    (c.exp === undefined || typeof c.exp === "number")
  );
}
