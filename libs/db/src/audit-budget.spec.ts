import type { AuditEventInput } from "./audit";
import { AUDIT_SUPPRESSED_ACTION, AuditBudget } from "./audit-budget";

describe("AuditBudget", () => {
  it("lets an actor's burst through, then one row per refill, each actor on its own", () => {
    let now = 0;
    const budget = new AuditBudget(3, 60, () => now); // one a second
    expect([1, 2, 3].map(() => budget.take("ann"))).toEqual([0, 0, 0]);
    expect(budget.take("ann")).toBe(1); // seconds to wait
    expect(budget.take("bob")).toBe(0);
    now += 1000;
    expect(budget.take("ann")).toBe(0);
    expect(budget.take("ann")).toBe(1);
    now += 60_000; // refilled to the capacity, not past it
    expect([1, 2, 3, 4].map(() => budget.take("ann"))).toEqual([0, 0, 0, 1]);
  });

  it("says how long until the next row is free at a slow refill", () => {
    const budget = new AuditBudget(1, 6, () => 0); // one every 10 s
    expect(budget.take("ann")).toBe(0);
    expect(budget.take("ann")).toBe(10);
  });

  it("admits refusal rows within the budget and counts the rest into one row before the actor's next", () => {
    let now = 1_000;
    const budget = new AuditBudget(2, 60, () => now);
    const refusal = (actorUrn: string, action = "test.actions.refused"): AuditEventInput => ({
      actorUrn,
      action,
      targetUrn: "urn:li:test:t",
      details: { via: "test-action" },
    });
    const flood = Array.from({ length: 50 }, (_, i) =>
      refusal("urn:li:corpuser:ann", i % 2 ? "a.refused" : "b.refused"),
    );
    expect(budget.admit(flood)).toEqual(flood.slice(0, 2)); // the burst; 48 counted
    expect(budget.admit([refusal("urn:li:corpuser:bob")])).toHaveLength(1); // another actor's own budget
    now += 1_000; // one row refilled
    const next = refusal("urn:li:corpuser:ann");
    expect(budget.admit([next])).toEqual([
      {
        actorUrn: "urn:li:corpuser:ann",
        action: AUDIT_SUPPRESSED_ACTION,
        targetUrn: null,
        details: {
          count: 48,
          actions: { "a.refused": 24, "b.refused": 24 },
          since: 1_000,
          until: 1_000,
          via: "audit-budget",
        },
      },
      next,
    ]);
    expect(budget.admit([next])).toEqual([]); // counted again, from now
  });
});
