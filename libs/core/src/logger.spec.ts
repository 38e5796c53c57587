/** The log's two formats: JSON for machines, one readable line per event on a developer's terminal. */
import { logFormat, prettyLine } from "./logger";

describe("logFormat", () => {
  it("is readable in development on a terminal, JSON on a pipe, under test, and always in production", () => {
    expect(logFormat({ NODE_ENV: "development" }, true)).toBe("pretty");
    expect(logFormat({ NODE_ENV: "development" }, false)).toBe("json");
    expect(logFormat({ NODE_ENV: "test" }, true)).toBe("json");
    expect(logFormat({ NODE_ENV: "production" }, true)).toBe("json");
    expect(logFormat({ NODE_ENV: "production", LOG_FORMAT: "pretty" }, true)).toBe("json");
  });

  it("follows LOG_FORMAT outside production", () => {
    expect(logFormat({ NODE_ENV: "development", LOG_FORMAT: "pretty" }, false)).toBe("pretty");
    expect(logFormat({ NODE_ENV: "development", LOG_FORMAT: "json" }, true)).toBe("json");
  });
});

describe("prettyLine", () => {
  const at = new Date(2024, 0, 31, 9, 5, 7, 42).getTime();
  const base = { level: 30, time: at, pid: 7, hostname: "h", name: "gateway" };

  it("shows a request as one line: method, path, status, time taken, who, and the ids", () => {
    const line = prettyLine({
      ...base,
      trace_id: "4bf92f3577b34da6a3ce929d0e0e4736",
      span_id: "00f067aa0ba902b7",
      request_id: "7d4c9e2a-0b1f-4a43-9a57-2f1d9c0e5b61",
      req: { id: "7d4c9e2a-0b1f-4a43-9a57-2f1d9c0e5b61", method: "POST", url: "/api/graphql" },
      res: { statusCode: 200 },
      responseTime: 12,
      actor: "urn:li:corpuser:admin",
      tokenId: "t-1",
      msg: "request completed",
    });
    expect(line).toBe(
      "09:05:07.042 INFO  gateway: request completed POST /api/graphql 200 12 ms " +
        "trace_id=4bf92f3577b34da6a3ce929d0e0e4736 request_id=7d4c9e2a-0b1f-4a43-9a57-2f1d9c0e5b61 " +
        "actor=urn:li:corpuser:admin tokenId=t-1",
    );
    expect(line).not.toContain("\n");
  });

  it("shows other fields as key=value, quoting what has spaces, and an error with where it was thrown", () => {
    const line = prettyLine({
      ...base,
      level: 50,
      name: "truncation-worker",
      msg: "job failed",
      queue: "truncate-timeseries",
      reason: "no partition left",
      progress: { deleted: 3 },
      err: { type: "Error", message: "boom", stack: "Error: boom\n    at run (/app/job.ts:12:3)\n    at next" },
    });
    expect(line).toBe(
      '09:05:07.042 ERROR truncation-worker: job failed queue=truncate-timeseries reason="no partition left" ' +
        'progress={"deleted":3} err="Error: boom" (at run (/app/job.ts:12:3))',
    );
  });

  it("colours the time, level and keys only when asked", () => {
    expect(prettyLine({ ...base, msg: "x" }, true)).toContain("\u001b[32mINFO ");
    expect(prettyLine({ ...base, msg: "x" })).not.toContain("\u001b[");
  });
});
