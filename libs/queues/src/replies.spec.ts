import { EventEmitter } from "node:events";
import type { RedisConnection } from "./connection";
import {
  JobFailedError,
  JobWaitTimeoutError,
  REPLY_MAX_BYTES,
  ReplyChannelLostError,
  ReplyInbox,
  sendReply,
} from "./replies";

/** A stand-in subscriber connection: `publish` delivers a message as Redis would, on any channel. */
async function inboxOnFakeSubscriber() {
  const subscriber = Object.assign(new EventEmitter(), { subscribe: async () => 1, unsubscribe: async () => 0 });
  const inbox = await ReplyInbox.open(subscriber as unknown as RedisConnection, "mdp", "evaluate-tests");
  const publish = (channel: string, message: string) => subscriber.emit("message", channel, message);
  return { inbox, publish, subscriber };
}

describe("ReplyInbox", () => {
  it("answers each wait with the reply to its own job, whatever order the replies come in", async () => {
    const { inbox, publish } = await inboxOnFakeSubscriber();
    const first = inbox.enqueueAndWait("job-1", 1000, async () => undefined);
    const second = inbox.enqueueAndWait("job-2", 1000, async () => undefined);
    publish(inbox.channel, JSON.stringify({ jobId: "job-2", returnvalue: { n: 2 } }));
    publish(inbox.channel, JSON.stringify({ jobId: "job-1", failedReason: "PostgreSQL is away" }));
    await expect(second).resolves.toEqual({ n: 2 });
    await expect(first).rejects.toEqual(new JobFailedError("job-1", "PostgreSQL is away"));
  });

  it("ignores other channels, other jobs and messages that are no reply, and then times out", async () => {
    const { inbox, publish } = await inboxOnFakeSubscriber();
    const waiting = inbox.enqueueAndWait("job-1", 50, async () => undefined);
    publish("mdp:evaluate-tests:replies:another-gateway", JSON.stringify({ jobId: "job-1", returnvalue: 1 }));
    for (const message of ["not json", "null", "42", "{}", JSON.stringify({ jobId: "job-9", returnvalue: 9 })]) {
      publish(inbox.channel, message);
    }
    await expect(waiting).rejects.toBeInstanceOf(JobWaitTimeoutError);
  });

  it("names a channel of its own, under the queue prefix", async () => {
    const [a, b] = [await inboxOnFakeSubscriber(), await inboxOnFakeSubscriber()];
    expect(a.inbox.channel).toMatch(/^mdp:evaluate-tests:replies:[0-9a-f-]{36}$/);
    expect(a.inbox.channel).not.toBe(b.inbox.channel);
  });

  it("keeps the waits under way when its connection closes, telling its listeners, and refuses new ones until subscribed again", async () => {
    const { inbox, subscriber } = await inboxOnFakeSubscriber();
    let troubles = 0;
    inbox.onTrouble(() => troubles++);
    let enqueued = 0;
    const waiting = inbox.enqueueAndWait("job-1", 60_000, async () => void enqueued++);
    subscriber.emit("close");
    expect(inbox.losses).toBe(1);
    expect(troubles).toBe(1);
    await expect(inbox.enqueueAndWait("job-2", 60_000, async () => void enqueued++)).rejects.toBeInstanceOf(
      ReplyChannelLostError,
    );
    expect(enqueued).toBe(1); // the second job was never queued: its reply could not have arrived
    subscriber.emit("ready");
    await new Promise((resolve) => setImmediate(resolve)); // the channel's SUBSCRIBE answered
    expect(troubles).toBe(2); // subscribed again: answers kept elsewhere may be there by now
    const third = inbox.enqueueAndWait("job-3", 60_000, async () => undefined);
    subscriber.emit("message", inbox.channel, JSON.stringify({ jobId: "job-3", returnvalue: 3 }));
    await expect(third).resolves.toBe(3);
    // The first wait went on; its owner ends it (answered from elsewhere, or for good).
    inbox.end("job-1", new ReplyChannelLostError("job-1"));
    await expect(waiting).rejects.toEqual(new ReplyChannelLostError("job-1"));
  });

  it("counts a Redis Cluster node's connection ending or failing as a loss", async () => {
    const { inbox, subscriber } = await inboxOnFakeSubscriber();
    const waiting = inbox.enqueueAndWait("job-1", 60_000, async () => undefined);
    subscriber.emit("-node", undefined, "127.0.0.1:7001");
    subscriber.emit("nodeError", new Error("connect ECONNREFUSED"), "127.0.0.1:7001");
    expect(inbox.losses).toBe(2);
    inbox.end("job-1");
    await expect(waiting).resolves.toBeUndefined();
  });
});

describe("sendReply", () => {
  const publisher = () => {
    const sent: string[] = [];
    const redis = { isCluster: false, publish: async (_: string, message: string) => (sent.push(message), 1) };
    return { redis: redis as unknown as RedisConnection, sent };
  };

  it("publishes a reply as it is", async () => {
    const { redis, sent } = publisher();
    await expect(sendReply(redis, "c", { jobId: "j", returnvalue: { ok: 1 } })).resolves.toBe(true);
    expect(sent).toEqual([JSON.stringify({ jobId: "j", returnvalue: { ok: 1 } })]);
  });

  it("never publishes a reply over REPLY_MAX_BYTES: its waiter gets a failure naming the limit", async () => {
    const { redis, sent } = publisher();
    await sendReply(redis, "c", { jobId: "j", returnvalue: "é".repeat(REPLY_MAX_BYTES / 2) });
    expect(sent).toHaveLength(1);
    expect(sent[0]!.length).toBeLessThan(1000);
    expect(JSON.parse(sent[0]!)).toEqual({
      jobId: "j",
      failedReason: expect.stringMatching(
        new RegExp(
          `^The worker's reply was \\d+ bytes, more than the limit of ${REPLY_MAX_BYTES} \\(REPLY_MAX_BYTES\\)`,
        ),
      ),
    });
  });
});
