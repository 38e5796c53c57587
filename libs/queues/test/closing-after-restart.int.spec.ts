/**
 * Closing what talks to Redis right after Redis came back leaves nothing armed, so the process can exit on its own.
 *
 * A connection closed while it reconnects: ioredis waited 2 s for the dead socket's end, which never comes; now
 * closeRedis gives it its chance to reconnect first, and a connection dropped while its server stays away (or a
 * worker's own, BullMQ's copy of the one given) arms no such wait (ClosedSocketAwareConnector).
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
import { createHook } from "node:async_hooks";
import { Redis } from "ioredis";
import { closeRedis, closeWorker, createRedis, createWorker, startChores, type RedisConnection } from "../src";

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

  it("a connection whose Redis stays away: closeRedis leaves no timer armed", async () => {
    const connection = createRedis(redis.url, "worker");
    await eventually("connected", () => connection.status === "ready");
    await redis.stop();
    try {
      await eventually("the connection lost Redis", () => connection.status === "reconnecting");
      // Given up on after its reconnect's chance, it is dropped: ioredis ended its socket, closed already, and armed
      // 2 s to destroy it should its close not come, which it never does.
      await expectNoTimerLeftBy(() => closeRedis(connection), 1_000);
    } finally {
      await redis.restart();
    }
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

  it("a worker closed right after Redis came back: no timer of its closing armed once close has returned", async () => {
    // BullMQ gives a worker a blocking connection of its own, a duplicate of the one passed (its options too); a
    // fixed reconnect delay holds it reconnecting for a while after Redis is back. Not createRedis's: without its
    // connector, this holds closeWorker's own part (letting the reconnect finish before closing).
    const connection = new Redis(redis.url, { maxRetriesPerRequest: null, retryStrategy: () => 1_000 });
    connections.push(connection);
    const worker = createWorker("truncate", async () => ({}), {
      connection,
      prefix: "{worker-close}",
      concurrency: 1,
      logger: createLogger("worker-close-test", "silent"),
    });
    await worker.waitUntilReady();
    const blocking = (await worker.backend.blockingClient) as unknown as RedisConnection;
    await eventually("the worker's blocking connection is ready", () => blocking.status === "ready");
    await redis.stop();
    await eventually("the worker's blocking connection lost Redis", () => blocking.status === "reconnecting");
    await redis.restart();

    // ioredis's 2 s wait for the end of a socket that had already closed (a connection that reconnects, told to QUIT)
    // would be one: a process could not exit on its own for 2 s after closing its worker.
    await expectNoTimerLeftBy(() => closeWorker(worker), 1_000);
  });
});

const timersKeepingAlive = () => process.getActiveResourcesInfo().filter((r) => r === "Timeout").length;

/**
 * Runs `closing`, then waits (up to `withinMs`) until no timer it armed keeps the process alive: counting every timer
 * cannot tell one armed by closing from a reconnect delay that closing cleared.
 */
async function expectNoTimerLeftBy(closing: () => Promise<void>, withinMs: number): Promise<void> {
  const armed = new Map<number, NodeJS.Timeout>();
  let closed = false; // the waiting below arms timers of its own
  const hook = createHook({
    init: (id, type, _trigger, resource) => {
      if (type === "Timeout" && !closed) armed.set(id, resource as NodeJS.Timeout);
    },
    destroy: (id) => armed.delete(id), // fired or cleared
  });
  hook.enable();
  try {
    await closing();
    closed = true;
    await eventually(
      "no timer armed by closing keeps the process alive",
      () => [...armed.values()].every((timer) => !timer.hasRef()),
      { timeoutMs: withinMs },
    );
  } finally {
    hook.disable();
  }
}
