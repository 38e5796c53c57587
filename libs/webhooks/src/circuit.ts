/** A subscription's circuit breaker: when a receiver that keeps failing is paused, probed, resumed or turned off. */

/** A subscription's circuit (docs/webhooks.md "When a receiver keeps failing"). */
export interface WebhookCircuit {
  consecutiveFailures: number;
  failingSince: Date | null;
  /** CLOSED: deliveries flow; OPEN: paused, one probe at circuitNextProbeAt */
  circuitState: string;
  circuitOpenedAt: Date | null;
  circuitNextProbeAt: Date | null;
  circuitProbes: number;
}

/** A receiver with no run of failures: where a subscription starts, and what a success or a reset brings it back to. */
export const CLOSED_WEBHOOK_CIRCUIT: Readonly<WebhookCircuit> = {
  consecutiveFailures: 0,
  failingSince: null,
  circuitState: "CLOSED",
  circuitOpenedAt: null,
  circuitNextProbeAt: null,
  circuitProbes: 0,
};

export interface WebhookCircuitSettings {
  /** WEBHOOK_CIRCUIT_FAILURES: attempts failed in a row that open it */
  failures: number;
  /** WEBHOOK_CIRCUIT_PROBE_MS: the first probe's wait; each failed probe doubles it, up to maxProbeMs */
  probeMs: number;
  maxProbeMs: number;
  /** WEBHOOK_DISABLE_AFTER_DAYS in ms: failing this long without a success turns the subscription off */
  disableAfterMs: number;
}

/** An open circuit's probes wait at most this long (ms), however many failed. */
export const WEBHOOK_MAX_PROBE_MS = 3_600_000;

/**
 * The circuit after an attempt: a success closes it and clears the run of failures; a failure extends the run, opens
 * the circuit at `failures` in a row (the first probe `probeMs` later), and, when open (a probe failed), waits twice
 * as long for the next probe. `disable`: every attempt has failed for `disableAfterMs`.
 */
export function nextWebhookCircuit(
  circuit: WebhookCircuit,
  succeeded: boolean,
  now: Date,
  settings: WebhookCircuitSettings,
): { circuit: WebhookCircuit; opened: boolean; closed: boolean; disable: boolean } {
  const wasOpen = circuit.circuitState !== "CLOSED";
  if (succeeded) {
    return {
      circuit: { ...CLOSED_WEBHOOK_CIRCUIT },
      opened: false,
      closed: wasOpen,
      disable: false,
    };
  }
  const failures = circuit.consecutiveFailures + 1;
  const failingSince = circuit.failingSince ?? now;
  const disable = now.getTime() - failingSince.getTime() >= settings.disableAfterMs;
  const wait = (probes: number) =>
    new Date(now.getTime() + Math.min(settings.maxProbeMs, settings.probeMs * 2 ** Math.min(probes, 30)));
  if (wasOpen) {
    // An attempt that was in flight when the circuit opened is no probe: the probes' schedule stays.
    if (circuit.circuitNextProbeAt && now < circuit.circuitNextProbeAt) {
      return {
        circuit: { ...circuit, consecutiveFailures: failures, failingSince },
        opened: false,
        closed: false,
        disable,
      };
    }
    const probes = circuit.circuitProbes + 1;
    return {
      circuit: {
        ...circuit,
        consecutiveFailures: failures,
        failingSince,
        circuitProbes: probes,
        circuitNextProbeAt: wait(probes),
      },
      opened: false,
      closed: false,
      disable,
    };
  }
  const opens = failures >= settings.failures;
  return {
    circuit: {
      consecutiveFailures: failures,
      failingSince,
      circuitState: opens ? "OPEN" : "CLOSED",
      circuitOpenedAt: opens ? now : null,
      circuitNextProbeAt: opens ? wait(0) : null,
      circuitProbes: 0,
    },
    opened: opens,
    closed: false,
    disable,
  };
}
