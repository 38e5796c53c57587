import { context, propagation, trace, type Context, type Span } from "@opentelemetry/api";

/**
 * Trace context travels from the gateway into a job as a W3C `traceparent` carrier stored in the job data.
 * Only the OpenTelemetry API is used here; it is a no-op unless main.ts registered an SDK.
 */
export type TraceCarrier = Record<string, string>;

export function injectTraceContext(ctx: Context = context.active()): TraceCarrier {
  const carrier: TraceCarrier = {};
  propagation.inject(ctx, carrier);
  return carrier;
}

export function extractTraceContext(carrier: TraceCarrier | undefined): Context {
  return propagation.extract(context.active(), carrier ?? {});
}

export const tracer = (name: string) => trace.getTracer(name);

/** Runs `fn` in a span that is a child of `parent`, recording failures on it. */
export async function inSpan<T>(name: string, parent: Context, fn: (span: Span) => Promise<T>): Promise<T> {
  return tracer("mdp").startActiveSpan(name, {}, parent, async (span) => {
    try {
      return await fn(span);
    } catch (error) {
      span.recordException(error as Error);
      span.setStatus({ code: 2 });
      throw error;
    } finally {
      span.end();
    }
  });
}
