import { nextWebhookCircuit } from "./circuit";

describe("a subscription's circuit", () => {
  const settings = { failures: 3, probeMs: 1_000, maxProbeMs: 4_000, disableAfterMs: 5 * 86_400_000 };
  const closed = {
    consecutiveFailures: 0,
    failingSince: null,
    circuitState: "CLOSED",
    circuitOpenedAt: null,
    circuitNextProbeAt: null,
    circuitProbes: 0,
  };
  const at = (ms: number) => new Date(1_800_000_000_000 + ms);

  it("opens at the failures in a row, probes at a doubling interval up to its cap, and closes on a success", () => {
    let c = nextWebhookCircuit(closed, false, at(0), settings);
    c = nextWebhookCircuit(c.circuit, false, at(10), settings);
    expect(c).toMatchObject({ opened: false, circuit: { circuitState: "CLOSED", consecutiveFailures: 2 } });
    c = nextWebhookCircuit(c.circuit, false, at(20), settings);
    expect(c).toMatchObject({ opened: true, circuit: { circuitState: "OPEN", circuitNextProbeAt: at(1_020) } });
    // An attempt in flight when it opened fails: no probe, the schedule stays.
    c = nextWebhookCircuit(c.circuit, false, at(30), settings);
    expect(c.circuit).toMatchObject({ circuitNextProbeAt: at(1_020), circuitProbes: 0 });
    c = nextWebhookCircuit(c.circuit, false, at(1_020), settings);
    expect(c.circuit).toMatchObject({ circuitNextProbeAt: at(3_020), circuitProbes: 1 });
    c = nextWebhookCircuit(c.circuit, false, at(3_020), settings);
    expect(c.circuit.circuitNextProbeAt).toEqual(at(7_020));
    c = nextWebhookCircuit(c.circuit, false, at(7_020), settings);
    expect(c.circuit.circuitNextProbeAt).toEqual(at(11_020)); // capped at 4 s
    expect(c.circuit.failingSince).toEqual(at(0));
    const healed = nextWebhookCircuit(c.circuit, true, at(11_020), settings);
    expect(healed).toMatchObject({ closed: true, circuit: closed });
  });

  it("says to turn the subscription off once every attempt has failed for disableAfterMs", () => {
    const failing = { ...closed, consecutiveFailures: 40, failingSince: at(0) };
    expect(nextWebhookCircuit(failing, false, at(settings.disableAfterMs - 1), settings).disable).toBe(false);
    expect(nextWebhookCircuit(failing, false, at(settings.disableAfterMs), settings).disable).toBe(true);
    expect(nextWebhookCircuit(failing, true, at(settings.disableAfterMs), settings).disable).toBe(false);
  });
});
