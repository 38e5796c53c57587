import { EventEmitter } from "node:events";
import type { RedisConnection } from "./connection";
import { JobFailedError, JobWaitTimeoutError, ReplyInbox } from "./replies";

/** A stand-in subscriber connection: `publish` delivers a message as Redis would, on any channel. */
async function inboxOnFakeSubscriber() {
  const subscriber = Object.assign(new EventEmitter(), { subscribe: async () => 1, unsubscribe: async () => 0 });
  const inbox = await ReplyInbox.open(subscriber as unknown as RedisConnection, "mdp", "evaluate-tests");
  const publish = (channel: string, message: string) => subscriber.emit("message", channel, message);
  return { inbox, publish };
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
});
