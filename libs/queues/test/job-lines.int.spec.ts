/**
 * A worker's job lines (real Redis): `job started` and `job ended` at info by default; with jobStartLogLevel saying
 * debug for a job (the evaluation worker's evaluate batches), one line at info, `job ended`, carrying what the start
 * line said (queue, job id and name, attempt, items, request id) with the outcome and duration.
 */
import { randomUUID } from "node:crypto";
import { createLogger } from "@mdp/core";
import { eventually } from "@mdp/core/testing";
import { closeRedis, createRedis, createWorker, Producer, type WorkerOptions } from "../src";

const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";

interface Line {
  level: number;
  msg: string;
  [field: string]: unknown;
}

async function jobLines(jobStartLogLevel?: WorkerOptions<"evaluate">["jobStartLogLevel"]): Promise<Line[]> {
  const prefix = `{test-job-lines-${randomUUID()}}`;
  const connection = createRedis(REDIS_URL, "worker");
  const workerConnection = createRedis(REDIS_URL, "worker");
  const producer = new Producer("evaluate", connection, prefix);
  const lines: Line[] = [];
  const logger = createLogger("job-lines-test", "info", { write: (line: string) => void lines.push(JSON.parse(line)) });
  const worker = createWorker("evaluate", async () => null, {
    connection: workerConnection,
    prefix,
    concurrency: 1,
    logger,
    ...(jobStartLogLevel && { jobStartLogLevel }),
  });
  try {
    void worker.run();
    const item = (taskId: string) => ({
      taskId,
      urns: ["urn:li:corpuser:a"],
      push: false,
      actorUrn: "urn:li:corpuser:a",
    });
    await producer.enqueue("j1", {
      kind: "evaluate",
      items: [{ ...item("t1"), requestId: "r1" }, item("t2")],
    });
    await eventually("the job's end line", () => lines.some((l) => l.msg === "job ended"));
    return lines.filter((l) => l.msg === "job started" || l.msg === "job ended");
  } finally {
    await worker.close();
    await producer.queue.obliterate({ force: true });
    await producer.close();
    await closeRedis(connection);
    await closeRedis(workerConnection);
  }
}

const said = { queue: "evaluate-tests", jobId: "j1", jobName: "evaluate", attempt: 1, items: 2, request_id: "r1" };

it("logs a job's start and end at info by default", async () => {
  const lines = await jobLines();
  expect(lines).toEqual([
    expect.objectContaining({ level: 30, msg: "job started", ...said }),
    expect.objectContaining({
      level: 30,
      msg: "job ended",
      ...said,
      outcome: "completed",
      durationMs: expect.any(Number),
    }),
  ]);
});

it("logs one line at info for a job whose start is at debug, saying all the start line would have", async () => {
  const lines = await jobLines(() => "debug");
  expect(lines).toEqual([
    expect.objectContaining({
      level: 30,
      msg: "job ended",
      ...said,
      outcome: "completed",
      durationMs: expect.any(Number),
    }),
  ]);
});
