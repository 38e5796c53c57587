import { createHash, timingSafeEqual } from "node:crypto";

const sha256 = (value: string) => createHash("sha256").update(value).digest();

/** Compares two secrets in time independent of where they differ (and of their lengths, by hashing first). */
export function safeEqual(given: string, expected: string): boolean {
  return timingSafeEqual(sha256(given), sha256(expected));
}

/** safeEqual against a secret fixed at startup: its digest is computed once, not on every request. */
export function matcherFor(expected: string): (given: string) => boolean {
  const expectedDigest = sha256(expected);
  return (given) => timingSafeEqual(sha256(given), expectedDigest);
}
