/**
 * Bull Board shows a running truncation's progress: the real truncation worker (in process, BullMQ, PostgreSQL)
 * reports the job's progress in the shape Bull Board draws as a bar ({progress: 0–100, ...counts}), read here through
 * Bull Board's own API as the dashboard's page reads it.
 */
import { eventually } from "@mdp/core/testing";
import { inTransaction, TimeseriesStore, type TimeseriesAspectRef } from "@mdp/db";
import { QUEUE_NAMES } from "@mdp/queues";
import { ROOT, createToken, startGateway, startTruncationWorker, type Harness } from "./support/gateway-harness";

const PROFILE: TimeseriesAspectRef = { entityType: "dataset", aspectName: "datasetProfile" };
const T0 = Date.UTC(2026, 0, 1);
const ROWS = 300;

interface BoardJob {
  id: string;
  progress: unknown;
}

describe("a running truncation in Bull Board", () => {
  let h: Harness;
  let worker: { close(): Promise<void> } | undefined;
  let token: string;

  beforeAll(async () => {
    h = await startGateway();
    token = (await createToken(h, ROOT)).token;
    // One day's partition holding the cutoff: deleted from in batches (one row each below), not dropped whole.
    const store = new TimeseriesStore(h.database.pool);
    const rows = Array.from({ length: ROWS + 1 }, (_, i) => {
      const t = i < ROWS ? T0 + i * 1000 : T0 + 12 * 3_600_000;
      return { urn: `urn:li:dataset:(urn:li:dataPlatform:x,t${i % 5},PROD)`, timestampMillis: t, valueJson: "{}" };
    });
    await store.prepare([{ ...PROFILE, rows }]);
    await inTransaction(h.database.pool, (client) => store.append(client, PROFILE, rows));
  });
  afterAll(async () => {
    await worker?.close();
    await h.close();
  });

  const boardJobs = async (status: string): Promise<BoardJob[]> => {
    const res = await fetch(
      `${h.baseUrl}/admin/queues/api/queues?activeQueue=${QUEUE_NAMES.truncate}&status=${status}`,
      { headers: { authorization: `Bearer ${token}` } },
    );
    const { queues } = (await res.json()) as { queues: Array<{ name: string; jobs: BoardJob[] }> };
    return queues.find((q) => q.name === QUEUE_NAMES.truncate)?.jobs ?? [];
  };

  it("shows a bar between 0 and 100 while it runs, with the counts, and 100 when it is done", async () => {
    const started = await h.post("/gms/operations?action=truncateTimeseriesAspect", {
      entityType: "dataset",
      aspect: "datasetProfile",
      endTimeMillis: T0 + ROWS * 1000,
      dryRun: false,
      batchSize: 1,
    });
    const taskId = started.body.value as string;
    worker = await startTruncationWorker(h);

    const running = await eventually(
      "the active job's progress",
      async () => {
        const job = (await boardJobs("active")).find((j) => j.id === taskId);
        const progress = job?.progress as { progress?: number } | undefined;
        return progress?.progress !== undefined && progress.progress > 0 && progress.progress < 100
          ? progress
          : undefined;
      },
      { timeoutMs: 30_000 },
    );
    expect(running).toMatchObject({ toDelete: ROWS, deleted: expect.any(Number) as number });
    const { deleted, toDelete, progress } = running as { deleted: number; toDelete: number; progress: number };
    expect(progress).toBeCloseTo((100 * deleted) / toDelete, 1);

    const done = await eventually(
      "the completed job",
      // 300 batches of one row: well within this on a quiet machine, past 30 s on a loaded one
      async () => (await boardJobs("completed")).find((j) => j.id === taskId),
      { timeoutMs: 90_000 },
    );
    expect(done!.progress).toMatchObject({ progress: 100, deleted: ROWS, toDelete: ROWS, batches: ROWS });
  }, 150_000);
});
