import { createHmac } from "node:crypto";

/** The only form in which a token is stored: HMAC-SHA256 keyed with TOKEN_SALT, hex (64 characters). */
export function hashToken(token: string, salt: string): string {
  return createHmac("sha256", salt).update(token).digest("hex");
}
