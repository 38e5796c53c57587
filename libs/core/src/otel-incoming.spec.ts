import { createServer, request, type IncomingMessage, type Server } from "node:http";
import { context, propagation, trace, type Span } from "@opentelemetry/api";
import { core, tracing } from "@opentelemetry/sdk-node";
import { leanContextManager } from "./otel-context";
import { traceIncomingRequests } from "./otel-incoming";

const TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736";

describe("incoming requests in the ids-only setup", () => {
  let untrace: () => void;
  let server: Server;
  let port: number;
  const seen: Array<Record<string, unknown>> = [];
  beforeAll(async () => {
    context.setGlobalContextManager(leanContextManager().enable());
    propagation.setGlobalPropagator(new core.W3CTraceContextPropagator());
    trace.setGlobalTracerProvider(new tracing.BasicTracerProvider({ sampler: new tracing.AlwaysOffSampler() }));
    untrace = traceIncomingRequests("test");
    server = createServer((req: IncomingMessage, res) => {
      const ids = () => trace.getActiveSpan()?.spanContext();
      const handler = ids();
      let body = "";
      req.on("data", (chunk: Buffer) => (body += chunk.toString()));
      // the end of the body is read elsewhere (a later packet, under the connection's context): still the request's
      req.on("end", () => {
        seen.push({ handler, end: ids(), recording: (trace.getActiveSpan() as Span).isRecording(), body });
        res.end("ok");
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    port = (server.address() as { port: number }).port;
  });
  afterAll(async () => {
    untrace();
    await new Promise((resolve) => server.close(resolve));
    trace.disable();
    propagation.disable();
    context.disable();
  });

  const post = (headers: Record<string, string>) =>
    new Promise<void>((resolve, reject) => {
      const req = request({ port, host: "127.0.0.1", method: "POST", headers }, (res) => {
        res.resume();
        res.on("end", resolve);
      });
      req.on("error", reject);
      req.end("hello");
    });

  it("continues the caller's trace, with a span id of its own, in the handler and in the body's listeners", async () => {
    seen.length = 0;
    await post({ traceparent: `00-${TRACE_ID}-00f067aa0ba902b7-01` });
    type Ids = { traceId: string; spanId: string };
    const [{ handler, end, recording, body }] = seen as [{ handler: Ids; end: Ids; recording: boolean; body: string }];
    expect(body).toBe("hello");
    expect(handler.traceId).toBe(TRACE_ID);
    expect(handler.spanId).toMatch(/^[0-9a-f]{16}$/);
    expect(handler.spanId).not.toBe("00f067aa0ba902b7");
    expect(end).toEqual(handler);
    expect(recording).toBe(false);
  });

  it("starts a new trace for a request that brings none, one per request", async () => {
    seen.length = 0;
    await post({});
    await post({});
    const [a, b] = seen.map((s) => (s.handler as { traceId: string }).traceId);
    expect(a).toMatch(/^[0-9a-f]{32}$/);
    expect(a).not.toMatch(/^0+$/);
    expect(b).not.toBe(a);
  });
});
