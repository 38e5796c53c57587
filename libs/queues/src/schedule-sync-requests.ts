import { randomUUID } from "node:crypto";
import type { ScheduleKindName } from "./names";
import type { Producer } from "./producer";

/**
 * How a writer of a schedule's row asks for its job scheduler to follow: a `sync-schedule` job on the schedule-sync
 * queue, run by the one writer of the schedules' job schedulers (@mdp/schedules' schedule-sync.ts), never an upsert
 * of its own. Each request is its own job (a random id): one asked for while an earlier one runs is not lost.
 */
export class ScheduleSyncRequests {
  constructor(readonly producer: Producer<"scheduleSync">) {}

  /** Asks for the schedule's job scheduler to follow its row (upserted, changed or removed); bounded like any add. */
  async request(scheduleKind: ScheduleKindName, id: string): Promise<void> {
    await this.producer.enqueue(randomUUID(), { scheduleKind, id });
  }
}
