import type { ScheduleKindName } from "@mdp/queues";
import { retentionPolicyKind } from "./retention-policy.kind";
import type { FiringQueue, OwnedRow, ScheduleKind } from "./schedule-kind";
import { scheduledTestKind } from "./scheduled-test.kind";

/**
 * Every kind of scheduled work, by name: the one table the firing runner and the schedule sync read. A new kind is
 * one `ScheduleKind` file, its name in @mdp/queues' SCHEDULE_KIND_NAMES, and its line here.
 */
export const SCHEDULE_KINDS: { readonly [K in ScheduleKindName]: ScheduleKind<OwnedRow, FiringQueue> } = {
  scheduledTest: scheduledTestKind,
  retentionPolicy: retentionPolicyKind,
};

/** The kind of the name, typed for the runner (every kind's row is an OwnedRow). */
export function scheduleKind(name: ScheduleKindName): ScheduleKind<OwnedRow, FiringQueue> {
  return SCHEDULE_KINDS[name];
}
