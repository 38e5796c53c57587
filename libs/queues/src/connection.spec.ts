import net from "node:net";
import { createRedis, whenReady } from "./connection";

describe("whenReady", () => {
  it("fails naming its bound when the server never answers, and leaves no listener behind", async () => {
    // Accepts the connection and says nothing: ioredis's ready check (INFO) never gets its answer.
    const sockets: net.Socket[] = [];
    const silent = net.createServer((socket) => void sockets.push(socket));
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
    const { port } = silent.address() as net.AddressInfo;
    const redis = createRedis(`redis://127.0.0.1:${port}`, "producer");
    try {
      await expect(whenReady(redis, 200)).rejects.toThrow("Redis did not become ready within 200 ms");
      // (ioredis keeps a listener of its own while it connects: a second wait that gives up adds none to it)
      const listeners = redis.listenerCount("ready");
      await expect(whenReady(redis, 50)).rejects.toThrow("within 50 ms");
      expect(redis.listenerCount("ready")).toBe(listeners);
    } finally {
      redis.disconnect();
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => silent.close(resolve));
    }
  });
});
