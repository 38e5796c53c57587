/**
 * jsonBody against express.json itself, over real HTTP: its additions (the nesting check, the errors naming what is at
 * fault) change nothing else, so every request comes out as express.json would have left it (the same body, or the
 * same kind of error); a body nesting too deep is refused before it is parsed.
 */
import express, { type ErrorRequestHandler, type RequestHandler } from "express";
import type { AddressInfo } from "node:net";
import http from "node:http";
import { gzipSync } from "node:zlib";
import { MAX_NESTING } from "@mdp/core";
import { jsonBody } from "./json-body";

const LIMIT = 1024;

function serve(parser: RequestHandler): Promise<http.Server> {
  const app = express();
  app.use(parser);
  app.post("/", (req, res) => {
    res.json({ body: req.body as unknown });
  });
  const report: ErrorRequestHandler = (error: { type?: string; code?: string }, _req, res, _next) => {
    res.status(500).json({ error: error.type ?? error.code ?? "untyped" });
  };
  app.use(report);
  return new Promise((resolve) => {
    const server = app.listen(0, "127.0.0.1", () => resolve(server));
  });
}

/** Sends `chunks` as the body, one write each (so a character can be split between two reads). */
function send(server: http.Server, headers: Record<string, string>, chunks: Buffer[]) {
  const { port } = server.address() as AddressInfo;
  return new Promise<{ status: number; body: unknown }>((resolve, reject) => {
    const req = http.request({ host: "127.0.0.1", port, method: "POST", path: "/", headers }, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (c: string) => (text += c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) as unknown }));
    });
    req.on("error", reject);
    for (const chunk of chunks) req.write(chunk);
    req.end();
  });
}

const utf8 = (text: string) => Buffer.from(text, "utf8");
const json = { "content-type": "application/json" };
const sized = (headers: Record<string, string>, chunks: Buffer[]) => ({
  ...headers,
  "content-length": String(chunks.reduce((n, c) => n + c.length, 0)),
});

// Each case: headers (Content-Length is added unless chunked) and the body's chunks.
const cases: Array<[string, Record<string, string>, Buffer[]]> = [
  ["an object", json, [utf8('{"urn": "urn:li:corpuser:ann", "n": [1, 2]}')]],
  ["an array", json, [utf8("[1, 2, 3]")]],
  ["a charset in any case", { "content-type": "Application/JSON; Charset=UTF-8" }, [utf8('{"a": 1}')]],
  ["a quoted charset", { "content-type": 'application/json; charset="utf-8"' }, [utf8('{"a": 1}')]],
  ["leading whitespace", json, [utf8('\n\t {"a": 1}')]],
  ["a byte order mark", json, [Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), utf8('{"a": 1}')])]],
  [
    "a character split between two writes",
    json,
    [Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xc3]), Buffer.from([0xa9, 0x22, 0x7d])],
  ],
  ["a string, not an object", json, [utf8('"text"')]],
  ["a number", json, [utf8("123")]],
  ["null", json, [utf8("null")]],
  ["malformed JSON", json, [utf8('{"a": ')]],
  ["whitespace only", json, [utf8("   ")]],
  ["a body over the limit", json, [utf8(JSON.stringify({ pad: "x".repeat(LIMIT) }))]],
  ["an empty body", json, []],
  ["a byte order mark alone", json, [Buffer.from([0xef, 0xbb, 0xbf])]],
  ["gzip", { ...json, "content-encoding": "gzip" }, [gzipSync(utf8('{"zipped": true}'))]],
  ["UTF-16", { "content-type": "application/json; charset=utf-16le" }, [Buffer.from('{"a": "\u00e9"}', "utf16le")]],
  ["Latin-1", { "content-type": "application/json; charset=iso-8859-1" }, [utf8('{"a": 1}')]],
  ["another type", { "content-type": "text/plain" }, [utf8('{"a": 1}')]],
  ["a JSON suffix type", { "content-type": "application/merge-patch+json" }, [utf8('{"a": 1}')]],
  ["no content type", {}, [utf8('{"a": 1}')]],
];

describe("jsonBody", () => {
  let lean: http.Server;
  let reference: http.Server;
  beforeAll(async () => {
    [lean, reference] = await Promise.all([serve(jsonBody(LIMIT)), serve(express.json({ limit: LIMIT }))]);
  });
  afterAll(async () => {
    await Promise.all([lean, reference].map((s) => new Promise((resolve) => s.close(resolve))));
  });

  it.each(cases)("leaves %s as express.json does", async (_name, headers, chunks) => {
    const withLength = sized(headers, chunks);
    const [ours, theirs] = await Promise.all([send(lean, withLength, chunks), send(reference, withLength, chunks)]);
    expect(ours).toEqual(theirs);
  });

  it("refuses a body nesting deeper than MAX_NESTING, however it is encoded", async () => {
    const deep = utf8(`${"[".repeat(MAX_NESTING + 1)}${"]".repeat(MAX_NESTING + 1)}`);
    const atLimit = utf8(`${"[".repeat(MAX_NESTING)}${"]".repeat(MAX_NESTING)}`);
    const tooDeep = { status: 500, body: { error: "BAD_USER_INPUT" } };
    const roomy = await serve(jsonBody(1 << 20));
    try {
      expect(await send(roomy, sized(json, [deep]), [deep])).toEqual(tooDeep);
      const zipped = [gzipSync(deep)];
      expect(await send(roomy, sized({ ...json, "content-encoding": "gzip" }, zipped), zipped)).toEqual(tooDeep);
      expect((await send(roomy, sized(json, [atLimit]), [atLimit])).status).toBe(200);
    } finally {
      await new Promise((resolve) => roomy.close(resolve));
    }
  });

  it("parses JSON objects, and refuses the rest with body-parser's error types", async () => {
    const object = [utf8('{"a": "\u00e9"}')];
    expect(await send(lean, sized(json, object), object)).toEqual({ status: 200, body: { body: { a: "\u00e9" } } });
    const primitive = [utf8("123")];
    expect(await send(lean, sized(json, primitive), primitive)).toEqual({
      status: 500,
      body: { error: "entity.parse.failed" },
    });
    const large = [utf8(JSON.stringify({ pad: "x".repeat(LIMIT) }))];
    expect(await send(lean, sized(json, large), large)).toEqual({ status: 500, body: { error: "entity.too.large" } });
  });

  it("reads a Content-Length of 00 as an empty body, as express.json does", async () => {
    const [ours, theirs] = await Promise.all(
      [lean, reference].map((server) => send(server, { ...json, "content-length": "00" }, [])),
    );
    expect(ours).toEqual(theirs);
  });

  it("hands a chunked body to express.json", async () => {
    const chunks = [utf8('{"a": '), utf8("1}")];
    expect(await send(lean, { ...json, "transfer-encoding": "chunked" }, chunks)).toEqual({
      status: 200,
      body: { body: { a: 1 } },
    });
  });
});
