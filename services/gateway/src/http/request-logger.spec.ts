/** The request log line over real HTTP: credentials in the query or the headers never reach it. */
import express from "express";
import type { AddressInfo } from "node:net";
import { Writable } from "node:stream";
import { createLogger } from "@mdp/core";
import { redactedUrl, requestLogger } from "./request-logger";

describe("request log line", () => {
  const lines: Array<Record<string, unknown>> = [];
  let server: ReturnType<express.Express["listen"]>;
  let base = "";
  beforeAll(async () => {
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
        done();
      },
    });
    const app = express();
    app.use(
      requestLogger(createLogger("request-logger-test", "info", sink), {
        hideQuery: (path) => path === "/graphql",
      }),
    );
    app.get(/.*/, (_req, res) => {
      // as authentication leaves it
      res.locals.actor = { urn: "urn:li:corpuser:ann", via: "token", tokenId: "t-1" };
      res.json({});
    });
    await new Promise<void>((resolve, reject) => {
      server = app.listen(0, "127.0.0.1", (error) => (error ? reject(error) : resolve()));
    });
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise((resolve) => server.close(resolve)));

  it("redacts credential-like query values and drops credential headers", async () => {
    const secret = "eyJhbGciOiJIUzI1NiJ9.c2VjcmV0.c2ln";
    lines.length = 0;
    await fetch(
      `${base}/gms/entities/x?access_token=${secret}&Token=${secret}&api-key=${secret}&client_secret=${secret}` +
        `&pass%77ord=${secret}&action=evaluate&count=3`,
      {
        headers: {
          authorization: `Bearer ${secret}`,
          "proxy-authorization": `Basic ${secret}`,
          cookie: `session=${secret}`,
          "x-auth-token": secret,
          "x-platform-actor": "urn:li:corpuser:ann",
        },
      },
    );
    await new Promise((resolve) => setImmediate(resolve));
    const line = JSON.stringify(lines);
    expect(lines).toHaveLength(1);
    expect(line).not.toContain(secret);
    const req = lines[0]!.req as {
      id: string;
      url: string;
      query: Record<string, string>;
      headers: Record<string, string>;
    };
    expect(req.url).toBe(
      "/gms/entities/x?access_token=[redacted]&Token=[redacted]&api-key=[redacted]&client_secret=[redacted]" +
        "&pass%77ord=[redacted]&action=evaluate&count=3",
    );
    expect(req.query).toMatchObject({ access_token: "[redacted]", action: "evaluate", count: "3" });
    expect(req.headers).not.toHaveProperty("authorization");
    expect(req.headers).not.toHaveProperty("cookie");
    expect(req.headers["x-platform-actor"]).toBe("urn:li:corpuser:ann");
    // the line's shape: who (never how), the answer, the time taken
    expect(lines[0]).toMatchObject({
      level: 30,
      msg: "request completed",
      actor: "urn:li:corpuser:ann",
      tokenId: "t-1",
      res: { statusCode: 200 },
    });
    expect(typeof lines[0]!.responseTime).toBe("number");
    expect((lines[0]!.res as { headers: Record<string, string> }).headers["x-request-id"]).toBe(req.id);
  });

  it("keeps a URL without credentials as it is, malformed encodings included", () => {
    expect(redactedUrl("/a?x=1&y=%E0%A4%A&z")).toBe("/a?x=1&y=%E0%A4%A&z");
    expect(redactedUrl("/a?%E0%A4%A=1&token")).toBe("/a?%E0%A4%A=1&token");
    expect(redactedUrl("/a?id_token=1")).toBe("/a?id_token=[redacted]");
  });
});
