import type { WebhookCircuit } from "@mdp/webhooks";
import type { Queryable } from "../timeseries/timeseries.store";
import { WEBHOOK_LIMITS } from "./webhook.types";

/** A subscription's circuit and run of failures, as the delivery that ends an attempt reads and writes them. */
export interface WebhookCircuitRow extends WebhookCircuit {
  id: string;
  ownerUrn: string;
  active: boolean;
}

/** The subscription's circuit, locked for the caller's transaction (an attempt's end updates it). */
export async function lockWebhookCircuit(db: Queryable, subscriptionId: string): Promise<WebhookCircuitRow | null> {
  const { rows } = await db.query<WebhookCircuitRow>(
    `SELECT id, owner_urn AS "ownerUrn", active, consecutive_failures AS "consecutiveFailures",
            failing_since AS "failingSince", circuit_state AS "circuitState", circuit_opened_at AS "circuitOpenedAt",
            circuit_next_probe_at AS "circuitNextProbeAt", circuit_probes AS "circuitProbes"
       FROM webhook_subscription WHERE id = $1::uuid FOR UPDATE`,
    [subscriptionId],
  );
  return rows[0] ?? null;
}

export async function writeWebhookCircuit(
  db: Queryable,
  row: Omit<WebhookCircuitRow, "ownerUrn" | "active">,
  disabledReason: string | null,
): Promise<void> {
  await db.query(
    `UPDATE webhook_subscription
        SET consecutive_failures = $2, failing_since = $3, circuit_state = $4, circuit_opened_at = $5,
            circuit_next_probe_at = $6, circuit_probes = $7,
            active = CASE WHEN $8::text IS NULL THEN active ELSE false END,
            disabled_reason = coalesce($8::text, disabled_reason)
      WHERE id = $1::uuid`,
    [
      row.id,
      row.consecutiveFailures,
      row.failingSince,
      row.circuitState,
      row.circuitOpenedAt,
      row.circuitNextProbeAt,
      row.circuitProbes,
      disabledReason?.slice(0, WEBHOOK_LIMITS.maxDescription) ?? null,
    ],
  );
}
