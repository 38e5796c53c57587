/**
 * `Content-Encoding: deflate` in both forms clients send: zlib-wrapped (HTTP's definition) and raw deflate (which
 * browsers accept too). A body that is neither stays a 400 naming the header; the body limit holds, decoded or sent.
 */
import { deflateRawSync, deflateSync } from "node:zlib";
import { ROOT, startGateway, systemClientHeaders, type Harness, type HttpBody } from "./support/gateway-harness";

const LIMIT = 1024 * 1024; // the gateway's request body limit (docs/limits.md)

describe("Content-Encoding: deflate", () => {
  let h: Harness;
  const send = async (body: Buffer, encoding = "deflate", path = "/gms/operations?action=getTaskStatus") => {
    const res = await fetch(`${h.baseUrl}${path}`, {
      method: "POST",
      headers: { ...systemClientHeaders(ROOT), "content-type": "application/json", "content-encoding": encoding },
      body,
    });
    return { status: res.status, body: (await res.json()) as HttpBody & Record<string, unknown> };
  };
  const json = Buffer.from('{"taskId":"x"}');

  beforeAll(async () => {
    h = await startGateway();
  });
  afterAll(() => h.close());

  it.each([
    ["zlib-wrapped", deflateSync],
    ["raw", deflateRawSync],
  ])("a %s deflate body is read", async (_form, compress) => {
    expect(await send(compress(json))).toMatchObject({ status: 404, body: { message: "Task x does not exist" } });
    expect(await send(compress(json), " Deflate ")).toMatchObject({ status: 404 });
    // GraphQL reads its body the same way
    const graphql = await send(compress(Buffer.from('{"query":"{ me { urn } }"}')), "deflate", "/api/graphql");
    expect(graphql).toMatchObject({ status: 200, body: { data: { me: { urn: ROOT } } } });
  });

  it("a body that is neither form is a 400 naming the header", async () => {
    for (const body of [json, deflateSync(json).subarray(0, 6), Buffer.from([0x78, 0x9c, 0xff, 0xff, 0xff])]) {
      expect(await send(body)).toMatchObject({
        status: 400,
        body: { code: "BAD_USER_INPUT", message: expect.stringContaining("Content-Encoding 'deflate'") },
      });
    }
  });

  it.each([
    ["zlib-wrapped", deflateSync],
    ["raw", deflateRawSync],
  ])("a %s body decoding past the body limit is a 413; one just within it is read", async (_form, compress) => {
    const padded = (bytes: number) => Buffer.concat([json, Buffer.alloc(bytes - json.length, 0x20)]); // JSON whitespace
    expect(padded(LIMIT + 1).length).toBe(LIMIT + 1);
    expect(await send(compress(padded(LIMIT + 1)))).toMatchObject({
      status: 413,
      body: { code: "PAYLOAD_TOO_LARGE", message: `Request body is larger than the limit of ${LIMIT} bytes.` },
    });
    expect(await send(compress(padded(LIMIT)))).toMatchObject({ status: 404 });
    // a bomb: 1 KB sent, 100 MB decoded
    expect(await send(compress(Buffer.alloc(100 * LIMIT, 0x20)))).toMatchObject({ status: 413 });
  });

  it("a body past the limit as sent is a 413", async () => {
    const random = Buffer.alloc(LIMIT + 10);
    for (let i = 0; i < random.length; i++) random[i] = (i * 2654435761) >>> 24;
    expect(await send(random)).toMatchObject({ status: 413 });
  });
});
