/**
 * With Redis away, a producer's failures reach its caller and nothing else: BullMQ prints a queue's unheard connection
 * errors with console.error, one block per reconnect attempt, which filled `pnpm test`'s output from passing outage
 * tests (and would fill a service's stderr past its log lines).
 */
import { eventually } from "@mdp/core/testing";
import { closeRedis, createRedis, Producer } from "../src";
// A free port is one nothing listens on: bound, then closed.
import { freePort } from "../../../test/support/services";

describe("a producer whose Redis is away", () => {
  it("rejects the enqueue, and prints nothing of its own", async () => {
    const printed = jest.spyOn(console, "error").mockImplementation(() => undefined);
    const connection = createRedis(`redis://127.0.0.1:${await freePort()}`, "producer");
    const producer = new Producer("truncate", connection, "{quiet}");
    let refusals = 0;
    connection.on("error", () => refusals++);
    try {
      const payload = { taskId: "t", entityType: "dataset", aspect: "datasetProfile", endTimeMillis: 1, batchSize: 1 };
      await expect(producer.enqueue("t", payload)).rejects.toThrow();
      await eventually("the connection has been refused a few times", () => refusals >= 3);
      expect(printed).not.toHaveBeenCalled();
    } finally {
      printed.mockRestore();
      await producer.close().catch(() => undefined);
      await closeRedis(connection);
    }
  });
});
