/**
 * Evaluation replies and invalidations on separate subscriber connections, against the real gateway and an evaluation
 * worker (PostgreSQL, Redis, BullMQ).
 */
import { Redis } from "ioredis";
import { eventually } from "@mdp/core/testing";
import { QUEUE_NAMES } from "@mdp/queues";
import { Queue } from "bullmq";
import { EVALUATE, BATCH, VIEWER, LONG, TAGGED } from "./support/evaluation-results";
import { startEvaluationResultsHarness } from "./support/evaluation-results-harness";

describe("evaluation results: bounded, and values only for GET_ENTITY", () => {
  const ev = startEvaluationResultsHarness();
  const { post } = ev;

  describe("evaluation replies and invalidations on separate subscriber connections", () => {
    /** Cuts a connection from the server's side, as Redis does past a client's output buffer limit. */
    const kill = async (connection: unknown) => {
      const socket = (connection as Redis).stream;
      const admin = new Redis(ev.gateway.config.REDIS_URL);
      try {
        await admin.client("KILL", "ADDR", `${socket.localAddress}:${socket.localPort}`);
      } finally {
        admin.disconnect();
      }
    };
    const onCluster = () => !(ev.gateway.connections.replySubscriber instanceof Redis);
    const waitFor = async (condition: () => boolean | Promise<boolean>, what: string, timeoutMs = 10_000) => {
      await eventually(what, condition, { timeoutMs });
    };
    const quickEvaluate = () => post(EVALUATE, { urn: LONG, testUrns: ["urn:li:test:long"] }, VIEWER);
    /** How many channels Redis has the connection subscribed to (CLIENT LIST's sub=). */
    const subscriptionsOf = async (connection: unknown) => {
      const socket = (connection as Redis).stream;
      const admin = new Redis(ev.gateway.config.REDIS_URL);
      try {
        const list = (await admin.client("LIST")) as string;
        const line = list.split("\n").find((l) => l.includes(` addr=${socket.localAddress}:${socket.localPort} `));
        return Number(/ sub=(\d+)/.exec(line ?? "")?.[1] ?? -1);
      } finally {
        admin.disconnect();
      }
    };
    /** Runs `during` while an evaluate request waits for its reply (the queue paused), then answers it. */
    const whileWaiting = async (during: () => Promise<void>) => {
      const connection = new Redis(ev.gateway.config.REDIS_URL, { maxRetriesPerRequest: null });
      const queue = new Queue(QUEUE_NAMES.evaluate, { connection, prefix: ev.gateway.config.QUEUE_PREFIX });
      await queue.pause();
      try {
        const started = Date.now();
        const waiting = quickEvaluate();
        await waitFor(async () => (await queue.getWaitingCount()) > 0, "the evaluate job to be queued");
        await during();
        await queue.resume();
        const res = await waiting;
        return { ...res, ms: Date.now() - started };
      } finally {
        await queue.resume();
        await queue.close();
        await connection.quit();
      }
    };

    it("subscribes the invalidations and the replies on two connections, one channel each", async () => {
      if (onCluster()) return;
      expect(await subscriptionsOf(ev.gateway.connections.subscriber)).toBe(1);
      expect(await subscriptionsOf(ev.gateway.connections.replySubscriber)).toBe(1);
    });

    /** An answer's text with its evaluation times left out: two evaluations of one request differ only in them. */
    const timeless = (body: unknown) => JSON.stringify(body).replace(/"evaluatedAt":\d+/g, "");

    it("answers a caller waiting when the reply subscriber drops, once its job has run (no 503), and keeps delivering invalidations", async () => {
      if (onCluster()) return; // CLIENT KILL ADDR of one node's socket: a single server's test
      const { subscriber, replySubscriber } = ev.gateway.connections;
      let invalidationsClosed = 0;
      const closed = () => invalidationsClosed++;
      subscriber.on("close", closed);
      let heard = 0;
      const onMessage = (channel: string) => {
        if (channel === `${ev.gateway.config.QUEUE_PREFIX}:invalidations`) heard++;
      };
      subscriber.on("message", onMessage);
      try {
        const expected = await quickEvaluate();
        let heardAtKill = 0;
        const res = await whileWaiting(async () => {
          await kill(replySubscriber);
          heardAtKill = heard;
        });
        // Neither a 503 (it was until the reply connection's loss stopped ending the waits) nor a 504 after
        // EVALUATE_TIMEOUT_MS (30 s): the reply, or the answer its worker kept, answers it.
        expect(res.status).toBe(200);
        expect(timeless(res.body)).toBe(timeless(expected.body));
        expect(res.ms).toBeLessThan(5_000);
        await waitFor(() => heard > heardAtKill + 2, "heartbeats on the invalidation channel");
        expect(invalidationsClosed).toBe(0);
      } finally {
        subscriber.off("close", closed);
        subscriber.off("message", onMessage);
      }
    });

    it("answers a caller whose reply reached no gateway from the answer its worker kept, exactly, within seconds", async () => {
      if (onCluster()) return; // UNSUBSCRIBE on one node's connection: a single server's test
      const replySubscriber = ev.gateway.connections.replySubscriber as Redis;
      const admin = new Redis(ev.gateway.config.REDIS_URL);
      const [channel] = (await admin.pubsub(
        "CHANNELS",
        `${ev.gateway.config.QUEUE_PREFIX}:${QUEUE_NAMES.evaluate}:replies:*`,
      )) as string[];
      admin.disconnect();
      const expected = await post(BATCH, { urns: [LONG, TAGGED], testUrns: ["urn:li:test:long"] }, VIEWER);
      expect(expected.status).toBe(200);
      // The gateway is not told: its worker's reply finds no subscriber, as during a Redis Cluster failover.
      await replySubscriber.unsubscribe(channel!);
      try {
        const started = Date.now();
        const res = await post(BATCH, { urns: [LONG, TAGGED], testUrns: ["urn:li:test:long"] }, VIEWER);
        const ms = Date.now() - started;
        expect(res.status).toBe(200);
        // The text the worker sent (jsonb would have reordered a result's keys), and values hidden as for VIEWER.
        expect(timeless(res.body)).toBe(timeless(expected.body));
        expect(ms).toBeLessThan(8_000); // the wait is looked up after 2 s, then every second; not 30 s
        const missing = await post(
          EVALUATE,
          { urn: "urn:li:dataset:(urn:li:dataPlatform:hive,db.nothing,PROD)", testUrns: ["urn:li:test:long"] },
          VIEWER,
        );
        expect(missing.status).toBe(404); // a refusal keeps its status
        expect(missing.body.message).toMatch(/does not exist/);
      } finally {
        await replySubscriber.subscribe(channel!);
      }
    });

    it("answers a caller waiting when the invalidation subscriber drops, its reply arriving on its own connection", async () => {
      if (onCluster()) return;
      const { subscriber, replySubscriber } = ev.gateway.connections;
      let repliesClosed = 0;
      const closed = () => repliesClosed++;
      replySubscriber.on("close", closed);
      let replies = 0;
      const onReply = (channel: string) => {
        if (channel.startsWith(`${ev.gateway.config.QUEUE_PREFIX}:${QUEUE_NAMES.evaluate}:replies:`)) replies++;
      };
      replySubscriber.on("message", onReply);
      try {
        const res = await whileWaiting(() => kill(subscriber));
        expect(res.status).toBe(200);
        expect(res.ms).toBeLessThan(5_000);
        expect(replies).toBeGreaterThan(0);
        expect(repliesClosed).toBe(0);
        await waitFor(() => subscriber.status === "ready", "the invalidation subscriber to reconnect");
      } finally {
        replySubscriber.off("close", closed);
        replySubscriber.off("message", onReply);
      }
    });
  });
});
