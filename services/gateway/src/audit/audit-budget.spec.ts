import { AuditBudget } from "./audit-budget";

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
});
