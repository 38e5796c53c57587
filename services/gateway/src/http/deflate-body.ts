import { Readable } from "node:stream";
import { promisify } from "node:util";
import { inflate, inflateRaw } from "node:zlib";
import type { Request, RequestHandler, Response } from "express";

const inflateZlib = promisify(inflate);
const inflateBare = promisify(inflateRaw);

/**
 * Whether `req` carries a JSON body with `Content-Encoding: deflate` (one encoding; a list goes to the body parser,
 * which refuses it). `req.is` is null for a request without a body.
 */
export function isDeflatedJson(req: Request): boolean {
  return req.headers["content-encoding"]?.trim().toLowerCase() === "deflate" && Boolean(req.is("application/json"));
}

/**
 * Reads a `Content-Encoding: deflate` body for `parse` (express.json). HTTP's deflate is zlib-wrapped (RFC 9110
 * 8.4.1.2), but clients also send raw deflate, and browsers accept both; body-parser inflates only the zlib form, so
 * raw bodies were refused with 400. Here the body is read (at most `limitBytes` as sent), inflated as zlib or, when it
 * is not, as raw deflate (at most `limitBytes` decoded), and given to `parse` as an identity body, which it then reads
 * as any other (charset, nesting check, JSON). A body that is neither is a 400 naming the header (bodyReadError); one
 * past the limit, sent or decoded, is body-parser's 413.
 */
export function parseDeflated(
  parse: RequestHandler,
  limitBytes: number,
  req: Request,
  res: Response,
  done: (error?: unknown) => void,
): void {
  readAtMost(req, limitBytes)
    .then((sent) => inflateEither(sent, limitBytes))
    .then(
      (decoded) => {
        const { "content-encoding": _encoding, "transfer-encoding": _transfer, ...headers } = req.headers;
        const body = Object.assign(Readable.from([decoded]), {
          headers: { ...headers, "content-length": String(decoded.length) },
          body: undefined as unknown,
        });
        void parse(body as unknown as Request, res, (error?: unknown) => {
          req.body = body.body;
          done(error);
        });
      },
      (error: unknown) => done(error),
    );
}

async function inflateEither(sent: Buffer, limitBytes: number): Promise<Buffer> {
  const options = { maxOutputLength: Math.max(1, limitBytes) };
  try {
    return await inflateZlib(sent, options);
  } catch (error) {
    if (isTooLarge(error)) throw tooLarge(limitBytes);
    try {
      return await inflateBare(sent, options);
    } catch (rawError) {
      // status 400 without a type: bodyReadError names the Content-Encoding
      throw isTooLarge(rawError) ? tooLarge(limitBytes) : Object.assign(new Error("not deflate"), { status: 400 });
    }
  }
}

const isTooLarge = (error: unknown) => (error as { code?: unknown } | null)?.code === "ERR_BUFFER_TOO_LARGE";
/** body-parser's own shape, which the error handler answers with 413 naming the limit */
const tooLarge = (limit: number) =>
  Object.assign(new Error("request entity too large"), { type: "entity.too.large", status: 413, limit });

/** The request's body as sent, refused as too large past `limitBytes` (the rest is read off and dropped). */
function readAtMost(req: Request, limitBytes: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let received = 0;
    let refused = false;
    req.on("data", (chunk: Buffer) => {
      if (refused) return;
      received += chunk.length;
      if (received > limitBytes) {
        refused = true;
        chunks.length = 0;
        reject(tooLarge(limitBytes));
      } else chunks.push(chunk);
    });
    req.once("end", () => resolve(Buffer.concat(chunks)));
    req.once("error", () => reject(Object.assign(new Error("request body could not be read"), { status: 400 })));
  });
}
