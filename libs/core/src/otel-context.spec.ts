import { EventEmitter } from "node:events";
import { createServer, request, type IncomingMessage } from "node:http";
import { createContextKey, ROOT_CONTEXT, type Context, type ContextManager } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { leanContextManager } from "./otel-context";

const KEY = createContextKey("request");
const requestContext = (name: string): Context => ROOT_CONTEXT.setValue(KEY, name);

/** Both managers, so that every case shows the lean one doing what OpenTelemetry's does. */
const managers: Array<[string, () => ContextManager]> = [
  ["lean", () => leanContextManager().enable()],
  ["OpenTelemetry's", () => new AsyncLocalStorageContextManager().enable()],
];

describe.each(managers)("the %s context manager", (_name, make) => {
  let manager: ContextManager;
  beforeEach(() => (manager = make()));
  afterEach(() => manager.disable());
  const seen = () => manager.active().getValue(KEY);

  it("runs a bound emitter's listeners in its context, whatever context emits", () => {
    const emitter = new EventEmitter();
    const calls: unknown[] = [];
    manager.bind(requestContext("a"), emitter);
    emitter.on("data", () => calls.push(seen()));
    emitter.once("end", () => calls.push(seen()));
    manager.with(requestContext("elsewhere"), () => emitter.emit("data"));
    emitter.emit("end");
    emitter.emit("end"); // once: gone
    expect(calls).toEqual(["a", "a"]);
  });

  it("keeps the first binding, and removes listeners as they were added", () => {
    const emitter = new EventEmitter();
    manager.bind(requestContext("first"), emitter);
    manager.bind(requestContext("second"), emitter);
    const calls: unknown[] = [];
    const listener = () => calls.push(seen());
    emitter.on("x", listener);
    emitter.once("y", listener);
    emitter.emit("x");
    emitter.off("x", listener);
    emitter.removeListener("y", listener);
    emitter.emit("x");
    emitter.emit("y");
    expect(calls).toEqual(["first"]);
    expect([emitter.listenerCount("x"), emitter.listenerCount("y")]).toEqual([0, 0]);
  });

  it("binds functions to a context", () => {
    const bound = manager.bind(requestContext("f"), () => seen());
    expect(manager.with(requestContext("other"), bound)).toBe("f");
  });

  it("carries a request's context into the listeners of a body that arrives in several packets, and of its answer", async () => {
    const calls: Record<string, unknown> = {};
    const server = createServer((req: IncomingMessage, res) => {
      // as OpenTelemetry's http instrumentation does for every request
      manager.with(requestContext("request"), () => {
        manager.bind(manager.active(), req);
        manager.bind(manager.active(), res);
      });
      let body = "";
      req.on("data", (chunk: Buffer) => {
        body += chunk.toString();
        calls.data = seen();
        if (body === "first") release(); // the client sends the rest only now: a packet of its own
      });
      req.on("end", () => {
        calls.end = seen();
        res.on("finish", () => (calls.finish = seen()));
        res.end(body);
      });
    });
    let release = () => {};
    const secondPart = new Promise<void>((resolve) => (release = resolve));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    try {
      const { port } = server.address() as { port: number };
      const answer = await new Promise<string>((resolve, reject) => {
        const req = request({ port, host: "127.0.0.1", method: "POST", path: "/" }, (res) => {
          let text = "";
          res.on("data", (chunk: Buffer) => (text += chunk.toString()));
          res.on("end", () => resolve(text));
        });
        req.on("error", reject);
        req.write("first");
        void secondPart.then(() => req.end(" and second"));
      });
      expect(answer).toBe("first and second");
      await new Promise((resolve) => setImmediate(resolve));
      expect(calls).toEqual({ data: "request", end: "request", finish: "request" });
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
