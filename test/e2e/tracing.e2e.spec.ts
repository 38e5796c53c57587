/**
 * Traces exported over OTLP/HTTP (README.md "Logs"): with OTEL_EXPORTER_OTLP_ENDPOINT set, the real gateway
 * process sends, for one GraphQL request, spans of each library the request passes through (node's HTTP server,
 * express, GraphQL, ioredis and pg), to a collector this test runs on 127.0.0.1.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { eventually } from "@mdp/core/testing";
import { createTestDatabase } from "@mdp/db/testing";
import {
  freePort,
  queuePrefix,
  startService,
  systemClient,
  waitUntilReady,
  type RunningService,
} from "../support/services";

interface ExportRequest {
  resourceSpans?: Array<{ scopeSpans?: Array<{ scope?: { name?: string }; spans?: unknown[] }> }>;
}

describe("traces over OTLP", () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  let gateway: RunningService;
  let baseUrl: string;
  let collector: http.Server;
  const scopes = new Set<string>();

  beforeAll(async () => {
    collector = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (chunk: Buffer) => chunks.push(chunk));
      req.on("end", () => {
        if (req.url === "/v1/traces") {
          const body = JSON.parse(Buffer.concat(chunks).toString()) as ExportRequest;
          for (const resource of body.resourceSpans ?? [])
            for (const scope of resource.scopeSpans ?? []) if (scope.scope?.name) scopes.add(scope.scope.name);
        }
        res.writeHead(200, { "content-type": "application/json" }).end("{}");
      });
    });
    await new Promise<void>((resolve) => collector.listen(0, "127.0.0.1", resolve));
    db = await createTestDatabase("e2e_tracing");
    const port = await freePort();
    gateway = startService("gateway", {
      DATABASE_URL: db.url,
      REDIS_URL: process.env.REDIS_URL ?? "redis://127.0.0.1:6379",
      QUEUE_PREFIX: queuePrefix("e2e-tracing"),
      PORT: String(port),
      OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${(collector.address() as AddressInfo).port}`,
      // export within a fifth of a second rather than the SDK's 5 s
      OTEL_BSP_SCHEDULE_DELAY: "200",
    });
    baseUrl = `http://127.0.0.1:${port}`;
    await waitUntilReady(baseUrl, gateway);
  }, 60_000);

  afterAll(async () => {
    await gateway?.stop();
    collector?.close();
    await db?.drop();
  });

  it("exports spans of the HTTP server, express, GraphQL, ioredis and pg for a request", async () => {
    const res = await fetch(`${baseUrl}/api/graphql`, {
      method: "POST",
      headers: { ...systemClient("urn:li:corpuser:admin"), "content-type": "application/json" },
      body: JSON.stringify({ query: "{ listAccessTokens(input: { start: 0, count: 10 }) { total } }" }),
    });
    expect(res.status).toBe(200);
    await eventually("every library's spans exported", async () => [...scopes].sort(), {
      until: (names) =>
        ["http", "express", "graphql", "ioredis", "pg"].every((lib) =>
          names.includes(`@opentelemetry/instrumentation-${lib}`),
        ),
      timeoutMs: 20_000,
    });
  });
});
