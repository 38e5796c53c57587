import { createHmac, timingSafeEqual } from "node:crypto";

/** The only form in which a token is stored: HMAC-SHA256 keyed with TOKEN_SALT, hex (64 characters). */
export function hashToken(token: string, salt: string): string {
  return tokenDigest(token, salt).toString("hex");
}

/** The same HMAC as raw bytes (32), for comparing with a stored hash without re-encoding either side. */
export function tokenDigest(token: string, salt: string): Buffer {
  return createHmac("sha256", salt).update(token).digest();
}

/** Whether `digest` is the stored hash, in time independent of where they differ (both are 32 bytes). */
export function digestMatches(digest: Buffer, stored: Buffer): boolean {
  return digest.length === stored.length && timingSafeEqual(digest, stored);
}
