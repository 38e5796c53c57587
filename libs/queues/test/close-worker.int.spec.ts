/**
 * closeWorker closes a worker whatever became of its blocking connection: one whose setting-up failed (its Redis given
 * up on, a version BullMQ refuses) made closeWorker throw before the worker was closed, leaving its connections open.
 */
import { createLogger } from "@mdp/core";
import { Redis } from "ioredis";
import { ClosedSocketAwareConnector, closeWorker, createWorker } from "../src";
// A free port is one nothing listens on: bound, then closed.
import { freePort } from "../../../test/support/services";

describe("closeWorker", () => {
  it("closes a worker whose blocking connection failed to set up", async () => {
    // Giving up at the first failure, the blocking connection (BullMQ's copy of this one, its options too) ends, and
    // its setting-up rejects. createRedis's connector, as every connection of ours has.
    const connection = new Redis(await freePort(), "127.0.0.1", {
      maxRetriesPerRequest: null,
      retryStrategy: () => null,
      lazyConnect: true,
      Connector: ClosedSocketAwareConnector,
    });
    const worker = createWorker("truncate", async () => ({}), {
      connection,
      prefix: "{close-worker}",
      concurrency: 1,
      logger: createLogger("close-worker-test", "silent"),
    });
    const setUp = await worker.backend.blockingClient?.then(
      () => "ready",
      () => "failed",
    );
    expect(setUp).toBe("failed");

    await closeWorker(worker);
    expect(worker.closing).toBeDefined();
    await worker.closing;
    connection.disconnect();
  });
});
