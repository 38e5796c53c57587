/**
 * Redis Cluster connections (createRedis on a redis-cluster:// URL) on a private 3-master cluster of this file's own:
 * a cluster connection closed stays closed while its nodes' connections end one after another, so BullMQ, which
 * interrupts a worker's blocking wait by disconnecting that connection and connects it again once it has ended, gets
 * it back. A cluster left in `close` by its nodes' late ends was never connected again: the worker took no more jobs
 * and could neither pause nor close (chores.int.spec.ts alone on a cluster: 3 runs in 52).
 */
import { randomUUID } from "node:crypto";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import type { Cluster } from "ioredis";
import { createLogger } from "@mdp/core";
import { eventually } from "@mdp/core/testing";
import { startRedisCluster, type RedisCluster } from "../../../scripts/redis-cluster";
import { closeRedis, closeWorker, createRedis, createWorker, Producer, whenReady, type RedisConnection } from "../src";

describe("a Redis Cluster connection", () => {
  let cluster: RedisCluster;
  const connections: RedisConnection[] = [];
  const connect = async () => {
    const redis = createRedis(cluster.url, "worker") as Cluster;
    connections.push(redis);
    await whenReady(redis);
    return redis;
  };
  /** Every master's connection up, so that each ends on its own socket's close when the cluster is disconnected. */
  const connectEveryNode = (redis: Cluster) => Promise.all(redis.nodes("master").map((node) => node.ping()));
  const allEnded = (nodes: ReturnType<Cluster["nodes"]>) =>
    eventually("every node's connection ended", () => nodes.every((node) => node.status === "end"));

  beforeAll(async () => {
    cluster = await startRedisCluster(path.resolve(__dirname, "..", "..", "..", ".data"), {
      name: `cluster-connection-${process.pid}`,
    });
  }, 60_000);
  afterAll(async () => {
    await Promise.all(connections.map((c) => closeRedis(c)));
    await cluster?.stop();
  });

  it("stays ended once disconnected, however late its nodes' connections end", async () => {
    const redis = await connect();
    await connectEveryNode(redis);
    const nodes = redis.nodes();
    expect(nodes.length).toBe(3);
    redis.disconnect();
    await allEnded(nodes);
    await new Promise((resolve) => setImmediate(resolve)); // the ends' own events
    expect(redis.status).toBe("end");
  });

  it("gives a worker its blocking connection back after BullMQ interrupts it, and the worker takes jobs again", async () => {
    const prefix = `{cluster-connection-${randomUUID()}}`;
    const connection = await connect();
    const producerConnection = await connect();
    const done: string[] = [];
    const worker = createWorker(
      "scheduleSync",
      async (_payload, job) => {
        done.push(job.id!);
        return {};
      },
      { connection, prefix, concurrency: 1, logger: createLogger("cluster-connection-test", "silent") },
    );
    const blocking = (await worker.backend.blockingClient) as unknown as Cluster;
    await connectEveryNode(blocking);
    const nodes = blocking.nodes();

    // What BullMQ does to interrupt a blocking wait (pausing, or a delayed job due sooner than the wait's end):
    // disconnect the connection and wait for its end, then connect it again; here with every node's end in between.
    await worker.backend.disconnectBlocking();
    await allEnded(nodes);
    const reconnected = worker.backend.reconnectBlocking().then(() => "connected again");
    await expect(Promise.race([reconnected, sleep(5_000, "still waiting", { ref: false })])).resolves.toBe(
      "connected again",
    );

    void worker.run();
    const producer = new Producer("scheduleSync", producerConnection, prefix);
    const id = randomUUID();
    await producer.enqueue(id, {});
    await eventually("the job taken and done", () => done.includes(id));
    await closeWorker(worker);
    await producer.queue.obliterate({ force: true });
    await producer.close();
  }, 30_000);
});
