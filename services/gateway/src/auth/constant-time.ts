import { hash, timingSafeEqual } from "node:crypto";

/** One-shot: no Hash object per call (the system client's id and secret are hashed on every request it makes). */
const sha256 = (value: string) => hash("sha256", value, "buffer");

/** Compares two secrets in time independent of where they differ (and of their lengths, by hashing first). */
export function safeEqual(given: string, expected: string): boolean {
  return timingSafeEqual(sha256(given), sha256(expected));
}

/** safeEqual against a secret fixed at startup: its digest is computed once, not on every request. */
export function matcherFor(expected: string): (given: string) => boolean {
  const expectedDigest = sha256(expected);
  return (given) => timingSafeEqual(sha256(given), expectedDigest);
}
