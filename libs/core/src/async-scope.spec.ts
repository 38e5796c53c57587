import { createContextKey, ROOT_CONTEXT } from "@opentelemetry/api";
import { currentLogContext, withLogContext } from "./log-context";
import { leanContextManager } from "./otel-context";
import { runInScope, scopeValue } from "./async-scope";

const KEY = createContextKey("trace");
const tick = () => new Promise((resolve) => setImmediate(resolve));

describe("one async scope for the trace, the log context and the reader", () => {
  const manager = leanContextManager().enable();
  afterAll(() => manager.disable());
  const trace = () => manager.active().getValue(KEY);

  it("keeps each across the others' scopes and what they await", async () => {
    const seen: unknown[] = [];
    await manager.with(ROOT_CONTEXT.setValue(KEY, "t1"), () =>
      withLogContext({ requestId: "r1" }, () =>
        runInScope("reader", "alice", async () => {
          await tick();
          seen.push(trace(), currentLogContext()?.requestId, scopeValue("reader"));
          // an inner trace context (an emitter's bound listener) keeps the request's log context and reader
          manager.with(ROOT_CONTEXT.setValue(KEY, "t2"), () =>
            seen.push(trace(), currentLogContext()?.requestId, scopeValue("reader")),
          );
          seen.push(trace());
        }),
      ),
    );
    expect(seen).toEqual(["t1", "r1", "alice", "t2", "r1", "alice", "t1"]);
    expect([trace(), currentLogContext(), scopeValue("reader")]).toEqual([undefined, undefined, undefined]);
  });

  it("keeps concurrent requests apart", async () => {
    const one = (id: string) =>
      manager.with(ROOT_CONTEXT.setValue(KEY, id), () =>
        withLogContext({ requestId: id }, async () => {
          await tick();
          return [trace(), currentLogContext()?.requestId];
        }),
      );
    expect(await Promise.all([one("a"), one("b")])).toEqual([
      ["a", "a"],
      ["b", "b"],
    ]);
  });

  it("attaches a context until it is disposed", () => {
    const token = manager.attach!(ROOT_CONTEXT.setValue(KEY, "attached"));
    expect(trace()).toBe("attached");
    token.dispose();
    expect(trace()).toBeUndefined();
  });
});
