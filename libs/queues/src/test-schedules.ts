import { CronSchedules } from "./cron-schedules";
import { scheduleJobOptions } from "./job-options";

const SCHEDULER_PREFIX = "test-";

/** A test's schedule id: its urn in base64url, since BullMQ builds its keys and job ids with ':'. */
export function testScheduleId(testUrn: string): string {
  return Buffer.from(testUrn, "utf8").toString("base64url");
}

export function testUrnOfScheduleId(id: string): string {
  return Buffer.from(id, "base64url").toString("utf8");
}

/**
 * The BullMQ job schedulers of scheduled tests (a test's `schedule.cron`), on the `test-schedules` queue
 * (cron-schedules.ts, as retention policies): one per test, each firing one job that an evaluation worker turns into
 * the test's runTest task. The metadata_test rows are the source of truth; only @mdp/schedules' schedule sync writes
 * these schedulers (the gateway reads their next runs).
 */
export class TestSchedules extends CronSchedules<"testSchedule"> {
  constructor(queue: ConstructorParameters<typeof CronSchedules<"testSchedule">>[0]) {
    super(queue, {
      idPrefix: SCHEDULER_PREFIX,
      jobName: "scheduledTestRun",
      jobData: (id) => ({ testUrn: testUrnOfScheduleId(id) }),
      jobOptions: scheduleJobOptions(),
    });
  }

  /** Upserts the test's schedule, or removes it when `cron` is null. */
  async setTest(testUrn: string, cron: string | null): Promise<void> {
    if (cron === null) await this.remove(testScheduleId(testUrn));
    else await this.upsert({ id: testScheduleId(testUrn), cron });
  }

  /** When each test's schedule fires next (epoch ms), by test urn; absent: not scheduled. */
  async nextRunsOfTests(testUrns: readonly string[]): Promise<Map<string, number>> {
    const byId = await this.nextRuns(testUrns.map(testScheduleId));
    return new Map([...byId].map(([id, at]) => [testUrnOfScheduleId(id), at]));
  }
}
