/**
 * The request log line over real HTTP: what was asked, the status, the time, who and the ids; no credential in the
 * query reaches it, and no header at all.
 */
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
    // as the gateway's: a dozen security headers on every answer
    app.use((_req, res, next) => {
      for (const name of ["content-security-policy", "strict-transport-security", "x-content-type-options"]) {
        res.setHeader(name, "x".repeat(100));
      }
      next();
    });
    app.use(
      requestLogger(createLogger("request-logger-test", "info", sink), {
        hideQuery: (path) => path === "/api/graphql",
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
    const req = lines[0]!.req as { id: string; url: string };
    expect(req.url).toBe(
      "/gms/entities/x?access_token=[redacted]&Token=[redacted]&api-key=[redacted]&client_secret=[redacted]" +
        "&pass%77ord=[redacted]&action=evaluate&count=3",
    );
    // the line's shape: what was asked, the answer, the time taken, who asked (never how), the request's id
    expect(lines[0]).toMatchObject({
      level: 30,
      msg: "request completed",
      req: { id: expect.any(String), method: "GET", url: req.url },
      res: { statusCode: 200 },
      actor: "urn:li:corpuser:ann",
      tokenId: "t-1",
      request_id: req.id,
    });
    expect(typeof lines[0]!.responseTime).toBe("number");
  });

  it("carries no header, the response's security headers least of all: a line stays short", async () => {
    lines.length = 0;
    await fetch(`${base}/api/graphql?query=x`, { headers: { "user-agent": "a".repeat(300), "x-platform-actor": "u" } });
    await new Promise((resolve) => setImmediate(resolve));
    expect(lines).toHaveLength(1);
    expect(Object.keys(lines[0]!.req as object).sort()).toEqual(["id", "method", "url"]);
    expect(lines[0]!.res).toEqual({ statusCode: 200 });
    expect((lines[0]!.req as { url: string }).url).toBe("/api/graphql"); // hideQuery
    const text = JSON.stringify(lines[0]);
    expect(text).not.toMatch(/content-security-policy|strict-transport|x-content-type|user-agent|x-platform-actor/i);
    expect(text.length).toBeLessThan(400);
  });

  it("keeps a URL without credentials as it is, malformed encodings included", () => {
    expect(redactedUrl("/a?x=1&y=%E0%A4%A&z")).toBe("/a?x=1&y=%E0%A4%A&z");
    expect(redactedUrl("/a?%E0%A4%A=1&token")).toBe("/a?%E0%A4%A=1&token");
    expect(redactedUrl("/a?id_token=1")).toBe("/a?id_token=[redacted]");
  });
});
