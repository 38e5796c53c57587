import { Server, type IncomingMessage, type ServerResponse } from "node:http";
import { context, propagation, ROOT_CONTEXT, SpanKind, trace } from "@opentelemetry/api";

/**
 * The incoming half of OpenTelemetry's http instrumentation, for the ids-only setup (otel-sdk.ts), where no span is
 * ever recorded: every request gets the trace it came with (`traceparent`) or a new one, a span id, and its request
 * and response emitters bound to that context, so that log lines and queued jobs carry its ids. The instrumentation
 * would also compute each span's attributes (its URL, host, peer address, user agent, protocol), time it and record its
 * duration metric: about a tenth of the gateway's CPU per request on a GraphQL `me`, all of it for a span the
 * AlwaysOff sampler then drops and for metrics no reader collects. A span the sampler does record (not in this setup)
 * is still ended when its response closes.
 *
 * Wraps http.Server's `emit` for "request", as the instrumentation does; the instrumentation keeps the outgoing half.
 * Returns what restores the original.
 */
export function traceIncomingRequests(tracerName: string): () => void {
  const tracer = trace.getTracer(tracerName);
  const prototype = Server.prototype as Server & { emit: (event: string | symbol, ...args: unknown[]) => boolean };
  const original = prototype.emit;
  prototype.emit = function (this: Server, event: string | symbol, ...args: unknown[]): boolean {
    if (event !== "request") return original.call(this, event, ...args);
    const request = args[0] as IncomingMessage;
    const response = args[1] as ServerResponse;
    const parent = propagation.extract(ROOT_CONTEXT, request.headers);
    const span = tracer.startSpan(request.method ?? "GET", { kind: SpanKind.SERVER }, parent);
    if (span.isRecording()) response.once("close", () => span.end());
    const active = trace.setSpan(parent, span);
    return context.with(active, () => {
      context.bind(active, request);
      context.bind(active, response);
      return original.call(this, event, ...args);
    });
  };
  return () => {
    prototype.emit = original;
  };
}
