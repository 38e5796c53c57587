/**
 * Webhook signing (docs/webhooks.md "Verifying a delivery"): the secret and how it is sealed at rest, and the
 * signatures a receiver checks (ours and Standard Webhooks').
 */
import { createCipheriv, createDecipheriv, createHmac, hkdfSync, randomBytes, timingSafeEqual } from "node:crypto";

/** The headers of a delivery. */
export const WEBHOOK_HEADERS = {
  /** the event's id: the same for every delivery of one event (retries, replays): a receiver's dedup key */
  eventId: "mdp-event-id",
  /** this delivery's id (a replay is a new delivery): what listWebhookDeliveries shows */
  deliveryId: "mdp-delivery-id",
  /** unix seconds when this attempt was signed */
  timestamp: "mdp-timestamp",
  /** `t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">` */
  signature: "mdp-signature",
  eventType: "mdp-event-type",
} as const;

/**
 * The Standard Webhooks headers (https://www.standardwebhooks.com), sent beside WEBHOOK_HEADERS: what the official
 * `standardwebhooks` libraries verify.
 */
export const STANDARD_WEBHOOK_HEADERS = {
  /** the message's id: the event's id, the same on every delivery of one event (a receiver's dedup key) */
  id: "webhook-id",
  /** unix seconds when this attempt was signed */
  timestamp: "webhook-timestamp",
  /** `v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>">`, space-separated when two secrets sign (a rotation) */
  signature: "webhook-signature",
} as const;

/**
 * A new signing secret: shown once to its creator, kept sealed. `whsec_` then the base64 (standard alphabet, as the
 * Standard Webhooks libraries decode it) of 32 random bytes.
 */
export function newWebhookSecret(): string {
  return `whsec_${randomBytes(32).toString("base64")}`;
}

/**
 * The HMAC key Standard Webhooks derives from a secret: the bytes the base64 after `whsec_` encodes (secrets made
 * before Standard Webhooks signing used the url-safe alphabet, which this decodes too).
 */
export function standardWebhookKey(secret: string): Buffer {
  return Buffer.from(secret.startsWith("whsec_") ? secret.slice(6) : secret, "base64");
}

/** The `webhook-signature` header's value: one `v1,<base64>` per secret, space-separated. */
export function signStandardWebhook(
  secrets: readonly string[],
  id: string,
  timestampSeconds: number,
  body: string,
): string {
  return secrets
    .map(
      (secret) =>
        `v1,${createHmac("sha256", standardWebhookKey(secret)).update(`${id}.${timestampSeconds}.${body}`).digest("base64")}`,
    )
    .join(" ");
}

/** The sealing key: derived from TOKEN_SIGNING_KEY (HKDF-SHA256), so no new secret is needed to run the service. */
function sealingKey(serverSecret: string): Buffer {
  return Buffer.from(hkdfSync("sha256", serverSecret, "mdp-webhooks", "webhook signing secrets v1", 32));
}

/** AES-256-GCM: base64 of iv (12) · tag (16) · ciphertext. */
export function sealWebhookSecret(secret: string, serverSecret: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv("aes-256-gcm", sealingKey(serverSecret), iv);
  const sealed = Buffer.concat([cipher.update(secret, "utf8"), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), sealed]).toString("base64");
}

/** The secret sealed by sealWebhookSecret; throws when the key differs (TOKEN_SIGNING_KEY changed) or it was altered. */
export function unsealWebhookSecret(sealed: string, serverSecret: string): string {
  const raw = Buffer.from(sealed, "base64");
  const decipher = createDecipheriv("aes-256-gcm", sealingKey(serverSecret), raw.subarray(0, 12));
  decipher.setAuthTag(raw.subarray(12, 28));
  return Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString("utf8");
}

/**
 * The `mdp-signature` header's value for `body` signed at `timestampSeconds`: one `v1=` per secret (two during a
 * rotation's overlap), each keyed with the whole secret string as it was shown.
 */
export function signWebhookBody(secret: string | readonly string[], timestampSeconds: number, body: string): string {
  const macs = (typeof secret === "string" ? [secret] : secret).map(
    (s) => `v1=${createHmac("sha256", s).update(`${timestampSeconds}.${body}`).digest("hex")}`,
  );
  return `t=${timestampSeconds},${macs.join(",")}`;
}

/**
 * What a receiver does (docs/webhooks.md "Verify a signature"): recompute the HMAC over `<t>.<raw body>`, compare in
 * constant time with each v1, and refuse a timestamp older than `toleranceSeconds` (replayed captures).
 */
export function verifyWebhookSignature(
  secret: string,
  header: string,
  body: string,
  toleranceSeconds = 300,
  nowSeconds = Math.floor(Date.now() / 1000),
): boolean {
  const parts = header.split(",").map((p) => p.trim().split("=", 2) as [string, string | undefined]);
  const t = Number(parts.find(([k]) => k === "t")?.[1]);
  if (!Number.isInteger(t) || Math.abs(nowSeconds - t) > toleranceSeconds) return false;
  const expected = Buffer.from(createHmac("sha256", secret).update(`${t}.${body}`).digest("hex"));
  return parts
    .filter(([k, v]) => k === "v1" && v !== undefined)
    .some(([, v]) => {
      const given = Buffer.from(v!);
      return given.length === expected.length && timingSafeEqual(given, expected);
    });
}
