import { Counter, Registry } from "prom-client";

/**
 * Access-token verifications, served at the gateway's /metrics (http/metrics.ts): accepted, or refused by reason.
 * Module-level, as the verifier's outcomes are the process's; the reasons are a fixed set.
 */
export const tokenMetricsRegistry = new Registry();

/**
 * Why a token was refused: `invalid` (signature, claims, a hash or actor that does not match its row, a chain longer
 * than MAX_TOKEN_CHAIN_DEPTH), `expired`, `revoked` (the token, or one of its chain revoked or expired).
 */
export type RefusalReason = "invalid" | "expired" | "revoked";

const verifications = new Counter({
  name: "mdp_token_verifications_total",
  help: "Access-token verifications, by result (accepted, refused) and reason of a refusal (invalid, expired, revoked)",
  labelNames: ["result", "reason"] as const,
  registers: [tokenMetricsRegistry],
});
verifications.inc({ result: "accepted", reason: "" }, 0);
for (const reason of ["invalid", "expired", "revoked"]) verifications.inc({ result: "refused", reason }, 0);

export const countAccepted = () => verifications.inc({ result: "accepted", reason: "" });
export const countRefused = (reason: RefusalReason) => verifications.inc({ result: "refused", reason });
