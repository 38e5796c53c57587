/**
 * Closing what talks to Redis right after Redis came back leaves nothing armed, so the process can exit on its own.
 *
 * A connection closed while it reconnects: ioredis waited 2 s for the dead socket's end, which never comes.
 *
 * Stopping a process's chores right after its Redis came back: the chores' worker was blocked on Redis when it went
 * away, and ioredis never settles a command that was in flight on a connection closed while it reconnects (its
 * stash of commands to resend is only drained by a reconnect). Closed then, BullMQ's watchdog of that wait stayed
 * armed for its whole block time (up to 11 s) after stop() returned: the process could not exit on its own, and jest
 * reported a worker that failed to exit gracefully. stop() now leaves nothing armed.
 */
import { createLogger } from "@mdp/core";
import { eventually } from "@mdp/core/testing";
import { startPrivateRedis, type PrivateRedis } from "../../../test/support/private-redis";
import { closeRedis, createRedis, startChores, type RedisConnection } from "../src";

describe("closing right after Redis came back", () => {
  let redis: PrivateRedis;
  const connections: RedisConnection[] = [];

  beforeAll(async () => {
    redis = await startPrivateRedis();
  });
  afterAll(async () => {
    await Promise.all(connections.map((c) => closeRedis(c)));
    await redis.stop();
  });

  it("a connection that is reconnecting: closeRedis leaves no timer armed", async () => {
    const timersAtStart = timersKeepingAlive();
    const connection = createRedis(redis.url, "worker");
    await eventually("connected", () => connection.status === "ready");
    await redis.stop();
    await eventually("the connection lost Redis", () => connection.status !== "ready");
    await redis.restart();
    await closeRedis(connection);
    await eventually("no timer keeps the process alive", () => timersKeepingAlive() === timersAtStart, {
      timeoutMs: 1_000,
    });
  });

  it("chores stopped with force: no timer armed once stop() has returned", async () => {
    const timersAtStart = timersKeepingAlive();
    const connection = createRedis(redis.url, "worker");
    const producerConnection = createRedis(redis.url, "worker");
    connections.push(connection, producerConnection);
    const logger = createLogger("chores-stop-test", "silent");
    const chores = startChores("gatewayChores", [{ name: "noop", everyMs: 60_000, run: async () => ({}) }], {
      connection,
      producerConnection,
      prefix: "{chores-stop}",
      logger,
    });
    await chores.ensureSchedulers();
    // The worker is waiting for a job (BZPOPMIN in flight) when Redis goes away and comes back.
    const observer = createRedis(redis.url, "producer");
    await eventually("the worker blocks on Redis", async () =>
      String(await observer.client("LIST")).includes("cmd=bzpopmin"),
    );
    await closeRedis(observer);
    await redis.stop();
    await eventually("the chores' connection lost Redis", () => connection.status !== "ready");
    await redis.restart();

    await chores.stop({ force: true });
    await Promise.all(connections.map((c) => closeRedis(c)));
    // Timers that keep the process alive: BullMQ's watchdog of the abandoned wait would be one, for up to 11 s.
    await eventually("no timer keeps the process alive", () => timersKeepingAlive() === timersAtStart, {
      timeoutMs: 3_000,
    });
  });
});

const timersKeepingAlive = () => process.getActiveResourcesInfo().filter((r) => r === "Timeout").length;
