/**
 * What each kind declares of its schedules, without I/O: what a firing needs of its owner (a test's: MANAGE_TESTS and
 * what its actions write; a retention policy's: MANAGE_SYSTEM_OPERATIONS), when a firing starts nothing though the
 * owner may (an INACTIVE test), the limit its firings count against, and the one table of kinds.
 */
import { SCHEDULE_KIND_NAMES } from "@mdp/queues";
import type { RetentionPolicy, ScheduledTestRow } from "@mdp/db";
import { retentionPolicyKind } from "./retention-policy.kind";
import { SCHEDULE_KINDS } from "./schedule-kinds";
import { scheduledTestKind, scheduledTestNeeds } from "./scheduled-test.kind";

const test = (more: Partial<ScheduledTestRow> = {}): ScheduledTestRow => ({
  urn: "urn:li:test:t",
  state: "ACTIVE",
  scheduleCron: "0 * * * *",
  ownerUrn: "urn:li:corpuser:owner",
  ownerTokenId: null,
  suspendedAt: null,
  definition: { on: { types: ["dataset"] }, rules: { property: "urn", operator: "exists" } },
  ...more,
});

describe("scheduled tests", () => {
  it("need MANAGE_TESTS, and what their actions write", () => {
    expect(scheduledTestNeeds(test().definition)).toEqual(["MANAGE_TESTS"]);
    const tagging = {
      ...(test().definition as object),
      actions: {
        passing: [{ type: "REMOVE_TAGS", params: {} }],
        failing: [{ type: "ADD_GLOSSARY_TERMS", params: {} }],
      },
    };
    expect(scheduledTestKind.needs(test({ definition: tagging }))).toEqual([
      "MANAGE_TESTS",
      "EDIT_ENTITY_GLOSSARY_TERMS",
      "EDIT_ENTITY_TAGS",
    ]);
    // A row whose definition is unreadable still needs the schedule's privilege.
    expect(scheduledTestNeeds(null)).toEqual(["MANAGE_TESTS"]);
  });

  it("start nothing while INACTIVE, and have no schedule without a cron", () => {
    expect(scheduledTestKind.idle!(test())).toBeUndefined();
    expect(scheduledTestKind.idle!(test({ state: "INACTIVE" }))).toBe("INACTIVE");
    expect(scheduledTestKind.cronOf(test({ scheduleCron: null }))).toBeNull();
  });

  it("count each firing against the owner's runTest limit, refused as test.run.rateLimited", () => {
    expect(scheduledTestKind.rateLimit).toEqual({ limit: "testRuns", action: "test.run.rateLimited" });
    expect(scheduledTestKind.work(test(), "urn:li:test:t")).toEqual({ kind: "SCHEDULED_TEST", urn: "urn:li:test:t" });
  });
});

describe("retention policies", () => {
  const policy = { id: "p1", cron: "0 3 * * *", ownerUrn: "urn:li:corpuser:owner" } as RetentionPolicy;

  it("need MANAGE_SYSTEM_OPERATIONS, count against no per-actor limit, and are named in the namespace", () => {
    expect(retentionPolicyKind.needs(policy)).toEqual(["MANAGE_SYSTEM_OPERATIONS"]);
    expect(retentionPolicyKind.rateLimit).toBeUndefined();
    expect(retentionPolicyKind.idle).toBeUndefined();
    expect(retentionPolicyKind.urnOf(policy, "li")).toBe("urn:li:retentionPolicy:p1");
    expect(retentionPolicyKind.cronOf(policy)).toBe("0 3 * * *");
  });
});

describe("SCHEDULE_KINDS", () => {
  it("holds one kind per name the queues know, each under its own name", () => {
    expect(Object.keys(SCHEDULE_KINDS).sort()).toEqual([...SCHEDULE_KIND_NAMES].sort());
    for (const [name, kind] of Object.entries(SCHEDULE_KINDS)) expect(kind.name).toBe(name);
  });
});
