import { EventEmitter } from "node:events";
import type { Redis } from "ioredis";
import { createLogger } from "@mdp/core";
import type { StoredAnswer } from "@mdp/tasks";
import {
  JobFailedError,
  JobWaitTimeoutError,
  ReplyChannelLostError,
  ReplyInbox,
  type EvaluationItem,
  type PayloadInput,
  type Producer,
} from "@mdp/queues";
import { EvaluationBatcher, UnexpectedResultError } from "./evaluation-batcher";

type EvaluateInput = Extract<PayloadInput<"evaluate">, { kind: "evaluate" }>;

/**
 * A stand-in for the queue and the worker: records each job and answers it as `answer` says, published on the
 * channel the job names, to a real ReplyInbox listening on a stand-in subscriber connection.
 */
async function fakeQueue(answer: (jobId: string, items: EvaluationItem[]) => unknown = echo) {
  const subscriber = Object.assign(new EventEmitter(), {
    subscribe: async () => 1,
    unsubscribe: async () => 0,
  });
  const inbox = await ReplyInbox.open(subscriber as unknown as Redis, "test", "evaluate-tests");
  const jobs: Array<{ jobId: string; items: EvaluationItem[]; replyTo?: string }> = [];
  const producer = {
    enqueue: async (jobId: string, payload: EvaluateInput) => {
      jobs.push({ jobId, items: payload.items, replyTo: payload.replyTo });
      const returnvalue = answer(jobId, payload.items);
      if (returnvalue !== undefined) {
        const reply = JSON.stringify({ jobId, returnvalue });
        setImmediate(() => subscriber.emit("message", payload.replyTo, reply));
      }
      return {};
    },
  };
  return { jobs, producer: producer as unknown as Producer<"evaluate">, inbox, subscriber };
}

const resultOf = (urn: string) => ({ urn, passing: [], failing: [], notApplicable: [], evaluatedAt: 1 });

/** Answers as the evaluation worker does: each urn's result serialized on its own. */
function echo(_jobId: string, items: EvaluationItem[]) {
  return {
    items: Object.fromEntries(
      items.map((item) => [
        item.taskId,
        { resultsJson: Object.fromEntries(item.urns.map((urn) => [urn, JSON.stringify(resultOf(urn))])) },
      ]),
    ),
  };
}

/** Answers as workers did before they serialized each result: objects. */
function echoObjects(_jobId: string, items: EvaluationItem[]) {
  return {
    items: Object.fromEntries(
      items.map((item) => [item.taskId, { results: Object.fromEntries(item.urns.map((u) => [u, resultOf(u)])) }]),
    ),
  };
}

const item = (taskId: string, urns = [`urn:li:dataset:${taskId}`]): EvaluationItem => ({
  taskId,
  urns,
  push: false,
  actorUrn: "urn:li:corpuser:ann",
});

describe("EvaluationBatcher", () => {
  it("puts the requests of one turn of the event loop into one job, and gives each its own result", async () => {
    const queue = await fakeQueue();
    const batcher = new EvaluationBatcher(queue.producer, queue.inbox, 1000);
    const results = await Promise.all(["a", "b", "c"].map((id) => batcher.submit(item(id))));
    expect(queue.jobs).toHaveLength(1);
    expect(queue.jobs[0]!.items.map((i) => i.taskId)).toEqual(["a", "b", "c"]);
    expect(queue.jobs[0]!.replyTo).toBe(queue.inbox.channel);
    expect(results).toEqual(
      ["a", "b", "c"].map((id) => ({
        resultsJson: { [`urn:li:dataset:${id}`]: JSON.stringify(resultOf(`urn:li:dataset:${id}`)) },
      })),
    );
    await batcher.submit(item("d"));
    expect(queue.jobs).toHaveLength(2);
  });

  it("puts an actor's requests that come while its job is being queued into its next job, sent once that one is queued", async () => {
    const queue = await fakeQueue();
    // A queue whose adds take a while, as Redis under load does; the second actor's job does not wait for the first's.
    let finishAdd!: () => void;
    const added = new Promise<void>((resolve) => (finishAdd = resolve));
    const enqueue = queue.producer.enqueue.bind(queue.producer);
    let adds = 0;
    const slow = {
      enqueue: async (...args: Parameters<typeof enqueue>) => {
        if (adds++ === 0) await added;
        return enqueue(...args);
      },
    } as unknown as Producer<"evaluate">;
    const batcher = new EvaluationBatcher(slow, queue.inbox, 1000);
    const first = batcher.submit(item("a"));
    await new Promise((resolve) => setImmediate(resolve)); // a's job is on its way
    const later = ["b", "c", "d"].map((id) => batcher.submit(item(id)));
    const bob = batcher.submit({ ...item("e"), actorUrn: "urn:li:corpuser:bob" });
    await bob; // queued at once: another actor's requests never wait for ann's
    await new Promise((resolve) => setImmediate(resolve));
    expect(queue.jobs.map((j) => j.items.map((i) => i.taskId))).toEqual([["e"]]);
    finishAdd();
    await Promise.all([first, ...later]);
    expect(queue.jobs.map((j) => j.items.map((i) => i.taskId))).toEqual([["e"], ["a"], ["b", "c", "d"]]);
  });

  it("fails the requests that waited for a job that could not be queued with its error, without trying again", async () => {
    const queue = await fakeQueue();
    let rejectAdd!: (error: Error) => void;
    const failing = new Promise<never>((_resolve, reject) => (rejectAdd = reject));
    let adds = 0;
    const producer = {
      enqueue: async () => {
        adds++;
        return failing;
      },
    } as unknown as Producer<"evaluate">;
    const batcher = new EvaluationBatcher(producer, queue.inbox, 1000);
    const first = batcher.submit(item("a"));
    await new Promise((resolve) => setImmediate(resolve));
    const later = batcher.submit(item("b"));
    rejectAdd(new Error("Command timed out"));
    await expect(first).rejects.toThrow("Command timed out");
    await expect(later).rejects.toThrow("Command timed out");
    expect(adds).toBe(1);
  });

  it("reads the answers of workers that send results as objects, as workers did before (a rolling upgrade)", async () => {
    const queue = await fakeQueue(echoObjects);
    const batcher = new EvaluationBatcher(queue.producer, queue.inbox, 1000);
    expect(await batcher.submit(item("a"))).toEqual({
      resultsJson: { "urn:li:dataset:a": JSON.stringify(resultOf("urn:li:dataset:a")) },
    });
    // Checked as before: what is not part of a result is not passed on.
    const extra = { ...resultOf("urn:li:dataset:b"), internal: "not for callers" };
    const withExtra = await fakeQueue(() => ({ items: { b: { results: { "urn:li:dataset:b": extra } } } }));
    const answer = await new EvaluationBatcher(withExtra.producer, withExtra.inbox, 1000).submit(item("b"));
    expect(JSON.parse((answer as { resultsJson: Record<string, string> }).resultsJson["urn:li:dataset:b"]!)).toEqual(
      resultOf("urn:li:dataset:b"),
    );
  });

  it("never puts two actors' requests into one job (workers share their job slots by actor)", async () => {
    const queue = await fakeQueue();
    const batcher = new EvaluationBatcher(queue.producer, queue.inbox, 1000);
    const bob = (taskId: string) => ({ ...item(taskId), actorUrn: "urn:li:corpuser:bob" });
    await Promise.all([batcher.submit(item("a")), batcher.submit(bob("b")), batcher.submit(item("c"))]);
    expect(queue.jobs.map((j) => j.items.map((i) => i.taskId))).toEqual([["a", "c"], ["b"]]);
  });

  it("passes on how long each request's evaluation held a worker thread, for the evaluation-time budget", async () => {
    const queue = await fakeQueue((jobId, items) => ({
      items: Object.fromEntries(
        items.map((i) => [
          i.taskId,
          i.taskId === "a"
            ? { ...echo(jobId, [i]).items[i.taskId]!, evaluationMs: 12.5 }
            : { refused: { code: "BAD_USER_INPUT", message: "stopped" }, evaluationMs: 3000 },
        ]),
      ),
    }));
    const batcher = new EvaluationBatcher(queue.producer, queue.inbox, 1000);
    const [a, b] = await Promise.all([batcher.submit(item("a")), batcher.submit(item("b"))]);
    expect(a).toMatchObject({ evaluationMs: 12.5 });
    expect(b).toEqual({ refused: { code: "BAD_USER_INPUT", message: "stopped" }, evaluationMs: 3000 });
  });

  it("starts a new job when one would hold too many requests or entities", async () => {
    const queue = await fakeQueue();
    const batcher = new EvaluationBatcher(queue.producer, queue.inbox, 1000, { items: 2, urns: 3 });
    await Promise.all([
      batcher.submit(item("a")),
      batcher.submit(item("b")),
      batcher.submit(item("c", ["u1", "u2"])),
      batcher.submit(item("d", ["u3", "u4"])),
    ]);
    expect(queue.jobs.map((j) => j.items.map((i) => i.taskId))).toEqual([["a", "b"], ["c"], ["d"]]);
  });

  it("rejects every request of a job that does not finish in time", async () => {
    const queue = await fakeQueue(() => undefined);
    const batcher = new EvaluationBatcher(queue.producer, queue.inbox, 20);
    const outcomes = await Promise.allSettled([batcher.submit(item("a")), batcher.submit(item("b"))]);
    for (const outcome of outcomes) {
      expect(outcome).toMatchObject({ status: "rejected", reason: expect.any(JobWaitTimeoutError) });
    }
  });

  it("rejects every request of a job that failed for good with JobFailedError, and its reason", async () => {
    const queue = await fakeQueue(() => undefined);
    const batcher = new EvaluationBatcher(queue.producer, queue.inbox, 1000);
    const outcomes = Promise.allSettled([batcher.submit(item("a")), batcher.submit(item("b"))]);
    await new Promise((resolve) => setImmediate(resolve)); // the batch is queued
    const { jobId } = queue.jobs[0]!;
    queue.subscriber.emit(
      "message",
      queue.inbox.channel,
      JSON.stringify({ jobId, failedReason: "PostgreSQL is away" }),
    );
    for (const outcome of await outcomes) {
      expect(outcome).toMatchObject({
        status: "rejected",
        reason: expect.objectContaining({ name: "JobFailedError", failedReason: "PostgreSQL is away" }),
      });
      expect((outcome as PromiseRejectedResult).reason).toBeInstanceOf(JobFailedError);
    }
  });

  it("rejects with UnexpectedResultError when the worker's answer is not readable, or lacks a request", async () => {
    const garbled = await fakeQueue(() => ({ items: { a: { nonsense: true } } }));
    await expect(new EvaluationBatcher(garbled.producer, garbled.inbox, 1000).submit(item("a"))).rejects.toBeInstanceOf(
      UnexpectedResultError,
    );
    const partial = await fakeQueue((jobId, items) => echo(jobId, items.slice(1)));
    const batcher = new EvaluationBatcher(partial.producer, partial.inbox, 1000);
    const [first, second] = await Promise.allSettled([batcher.submit(item("a")), batcher.submit(item("b"))]);
    expect(first).toMatchObject({ status: "rejected", reason: expect.any(UnexpectedResultError) });
    expect(second).toMatchObject({ status: "fulfilled" });
    // An answer that lacks one of the request's urns would otherwise reach its caller as an empty value.
    const urnMissing = await fakeQueue((jobId, items) => echo(jobId, [{ ...items[0]!, urns: ["urn:li:dataset:x"] }]));
    await expect(
      new EvaluationBatcher(urnMissing.producer, urnMissing.inbox, 1000).submit(item("c", ["urn:li:dataset:x", "u2"])),
    ).rejects.toThrow(new UnexpectedResultError("no result for u2"));
  });

  it("rejects every request when the job cannot be queued", async () => {
    const queue = await fakeQueue();
    const failing = {
      enqueue: async () => {
        throw new Error("Redis is away");
      },
    } as unknown as Producer<"evaluate">;
    const batcher = new EvaluationBatcher(failing, queue.inbox, 1000);
    await expect(Promise.all([batcher.submit(item("a")), batcher.submit(item("b"))])).rejects.toThrow("Redis is away");
  });

  describe("lost replies", () => {
    /** A stand-in for the task rows and BullMQ's job states, counting the look-ups. */
    const recoveryOf = (rows: Map<string, StoredAnswer>, states = new Map<string, string>(), checkAfterMs = 200) => {
      const lookUps: string[][] = [];
      return {
        lookUps,
        recovery: {
          storedAnswers: async (taskIds: readonly string[]) => {
            lookUps.push([...taskIds]);
            return taskIds.flatMap((id) => (rows.has(id) ? [rows.get(id)!] : []));
          },
          jobState: async (jobId: string) => states.get(jobId) ?? "active",
          logger: createLogger("test", "silent"),
          checkAfterMs,
          intervalMs: 20,
        },
      };
    };
    /** The answer a worker sends for `urn`, as text that re-serializing an object would not give back (key order). */
    const sentText = (urn: string) => `{"urn":"${urn}","notApplicable":[],"passing":[],"failing":[],"evaluatedAt":7}`;
    const kept = (taskId: string, reply: unknown): StoredAnswer => ({
      taskId,
      state: "completed",
      reply,
      result: null,
      failedReason: null,
    });
    const batchers: EvaluationBatcher[] = [];
    afterEach(async () => {
      for (const batcher of batchers.splice(0)) await batcher.close();
      jest.useRealTimers();
    });
    /**
     * The loop's intervals and the clock under the test's hand, so that "nothing happened in three intervals" means
     * three intervals ran; replies (setImmediate) still come on their own.
     */
    const useFakeClock = () => jest.useFakeTimers({ doNotFake: ["setImmediate", "nextTick", "queueMicrotask"] });

    it("answers a request whose reply was lost with the connection from the answer its worker kept, exactly", async () => {
      const queue = await fakeQueue(() => undefined); // the reply never comes
      const rows = new Map<string, StoredAnswer>();
      const { recovery, lookUps } = recoveryOf(rows, undefined, 30_000);
      const batcher = new EvaluationBatcher(queue.producer, queue.inbox, 60_000, undefined, recovery);
      batchers.push(batcher);
      const answer = batcher.submit(item("a"));
      await new Promise((resolve) => setImmediate(resolve)); // the batch is queued
      queue.subscriber.emit("close");
      rows.set("a", kept("a", { resultsJson: { "urn:li:dataset:a": sentText("urn:li:dataset:a") }, evaluationMs: 4 }));
      const started = Date.now();
      expect(await answer).toEqual({
        resultsJson: { "urn:li:dataset:a": sentText("urn:li:dataset:a") },
        evaluationMs: 4,
      });
      expect(Date.now() - started).toBeLessThan(10_000); // after a loss at each interval, not after checkAfterMs
      expect(lookUps.every((ids) => ids.length === 1)).toBe(true);
    });

    it("keeps a refusal's status, and looks up a long wait without any loss, all its requests in one look-up", async () => {
      const queue = await fakeQueue(() => undefined);
      const rows = new Map<string, StoredAnswer>([
        ["a", kept("a", { refused: { code: "NOT_FOUND", message: "Entity urn:li:dataset:a does not exist" } })],
        ["b", kept("b", { resultsJson: { "urn:li:dataset:b": sentText("urn:li:dataset:b") } })],
      ]);
      const { recovery, lookUps } = recoveryOf(rows);
      const batcher = new EvaluationBatcher(queue.producer, queue.inbox, 60_000, undefined, recovery);
      batchers.push(batcher);
      const started = Date.now();
      const [a, b] = await Promise.all([batcher.submit(item("a")), batcher.submit(item("b"))]);
      expect(Date.now() - started).toBeGreaterThanOrEqual(200); // not before checkAfterMs: nothing was lost
      expect(a).toEqual({ refused: { code: "NOT_FOUND", message: "Entity urn:li:dataset:a does not exist" } });
      expect(b).toEqual({ resultsJson: { "urn:li:dataset:b": sentText("urn:li:dataset:b") } });
      expect(lookUps).toEqual([["a", "b"]]);
    });

    it("looks nothing up for requests answered by their replies", async () => {
      useFakeClock();
      const queue = await fakeQueue();
      const { recovery, lookUps } = recoveryOf(new Map());
      const batcher = new EvaluationBatcher(queue.producer, queue.inbox, 60_000, undefined, recovery);
      batchers.push(batcher);
      for (let i = 0; i < 5; i++) await Promise.all([batcher.submit(item(`a${i}`)), batcher.submit(item(`b${i}`))]);
      queue.subscriber.emit("close"); // with no wait under way, a loss looks nothing up either
      await jest.advanceTimersByTimeAsync(3 * 20); // three intervals of the loop, with nothing to do
      expect(lookUps).toEqual([]);
    });

    it("answers from a row without a kept reply only once the reply had an interval more to come", async () => {
      const queue = await fakeQueue(() => undefined);
      const rows = new Map<string, StoredAnswer>([
        ["a", { taskId: "a", state: "failed", reply: null, result: null, failedReason: "PostgreSQL is away" }],
        ["b", { ...kept("b", null), result: { results: { "urn:li:dataset:b": resultOf("urn:li:dataset:b") } } }],
      ]);
      const { recovery, lookUps } = recoveryOf(rows);
      const batcher = new EvaluationBatcher(queue.producer, queue.inbox, 60_000, undefined, recovery);
      batchers.push(batcher);
      const [a, b] = await Promise.allSettled([batcher.submit(item("a")), batcher.submit(item("b"))]);
      expect(lookUps.length).toBeGreaterThanOrEqual(2);
      expect(a).toMatchObject({ status: "rejected", reason: expect.any(JobFailedError) });
      expect((a as PromiseRejectedResult).reason.failedReason).toBe("PostgreSQL is away");
      expect(b).toEqual({
        status: "fulfilled",
        value: { resultsJson: { "urn:li:dataset:b": JSON.stringify(resultOf("urn:li:dataset:b")) } },
      });
    });

    it("ends with ReplyChannelLostError a job that ended after a loss without its answer kept", async () => {
      useFakeClock();
      const queue = await fakeQueue(() => undefined);
      const states = new Map<string, string>();
      const { recovery, lookUps } = recoveryOf(new Map(), states);
      const batcher = new EvaluationBatcher(queue.producer, queue.inbox, 60_000, undefined, recovery);
      batchers.push(batcher);
      const answer = batcher.submit(item("a"));
      const outcome = answer.then(
        () => "answered",
        () => "ended",
      );
      await new Promise((resolve) => setImmediate(resolve));
      queue.subscriber.emit("close");
      await jest.advanceTimersByTimeAsync(3 * 20); // the loss's look-up and three intervals' more, the job running
      expect(lookUps.length).toBeGreaterThanOrEqual(3);
      expect(await Promise.race([outcome, Promise.resolve("waiting")])).toBe("waiting");
      states.set(queue.jobs[0]!.jobId, "completed");
      await jest.advanceTimersByTimeAsync(2 * 20); // seen ended, then a reply's interval more without one
      await expect(answer).rejects.toEqual(new ReplyChannelLostError(queue.jobs[0]!.jobId));
    });
  });
});
