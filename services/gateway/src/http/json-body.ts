import express, { type Request, type RequestHandler } from "express";
import { AppError, MAX_NESTING } from "@mdp/core";
import { isDeflatedJson, parseDeflated } from "./deflate-body";

/**
 * express.json (body-parser) with the gateway's two additions: a body nesting deeper than MAX_NESTING is refused
 * before it is parsed (`verify` runs after decompression and charset decoding, before JSON.parse), and a body that
 * cannot be read is answered with an AppError naming the header or limit at fault (bodyReadError).
 */
export function jsonBody(limitBytes: number, options: { anyType?: boolean } = {}): RequestHandler {
  const parse = express.json({
    limit: limitBytes,
    // A client that sends JSON without saying so (DataHub's frontend posts its session request as text/plain, Apache
    // HttpClient's default): its route reads the body as JSON whatever the Content-Type.
    ...(options.anyType && { type: () => true }),
    // A charset other than UTF-8 (UTF-16) is decoded first.
    verify: (_req, _res, body, charset) => {
      const bytes =
        charset === "utf-8" || charset === "utf8" ? body : Buffer.from(new TextDecoder(charset).decode(body));
      if (nestsTooDeep(bytes)) throw tooDeep();
    },
  });
  return (req, res, next) => {
    const done = (error?: unknown) => next(error === undefined ? undefined : bodyReadError(error, req));
    // zlib-wrapped or raw deflate, which body-parser alone would refuse
    if (isDeflatedJson(req)) parseDeflated(parse, limitBytes, req, res, done);
    else parse(req, res, done);
  };
}

const tooDeep = () => Object.assign(new Error("request body nests too deep"), { type: "entity.too.deep" });

/**
 * Whether the JSON text in `bytes` (UTF-8) nests arrays and objects more than MAX_NESTING levels deep. JSON.parse
 * itself takes any depth, but whatever walks the value after it (validation, jsonb, GraphQL's input coercion) is
 * recursive: a 1 MiB body can nest 500,000 levels. A scan of the bytes, before parsing: brackets inside strings do not
 * count; a multi-byte character's bytes are all >= 0x80, so none is taken for a quote or a bracket. A body shorter
 * than the limit cannot exceed it and is not scanned.
 */
export function nestsTooDeep(bytes: Uint8Array, limit = MAX_NESTING): boolean {
  if (bytes.length <= limit) return false;
  let depth = 0;
  let inString = false;
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i]!;
    if (inString) {
      if (b === 0x5c)
        i++; // a backslash: the next byte is escaped
      else if (b === 0x22) inString = false;
    } else if (b === 0x22) inString = true;
    else if (b === 0x5b || b === 0x7b) {
      if (++depth > limit) return true;
    } else if (b === 0x5d || b === 0x7d) depth--;
  }
  return false;
}

/**
 * What the caller gets when its body cannot be read: an AppError naming the header or limit at fault. body-parser's
 * errors are a 4xx but some carry no `type` (a decompression error is zlib's, e.g. "incorrect header check"), and
 * their text is not for clients; anything that is no client error (a 5xx) goes on as it is.
 */
export function bodyReadError(error: unknown, req: Request): unknown {
  if (error instanceof AppError) return error;
  const e = error as { type?: string; status?: number; limit?: number; charset?: string } | null;
  const encoding = req.headers["content-encoding"];
  const type = e?.type;
  if (type === "entity.too.deep") {
    return new AppError(
      "BAD_USER_INPUT",
      `Request body nests arrays and objects deeper than the limit of ${MAX_NESTING} levels.`,
      { limit: MAX_NESTING },
    );
  }
  if (type === "encoding.unsupported") {
    return new AppError(
      "UNSUPPORTED_MEDIA_TYPE",
      `Content-Encoding '${String(encoding).slice(0, 100)}' is not supported; send gzip, deflate, br or none.`,
    );
  }
  // The error handler's own answers (400, 413, 415).
  if (type === "charset.unsupported" || type === "entity.parse.failed" || type === "entity.too.large") return error;
  if (typeof e?.status !== "number" || e.status >= 500) return error;
  if (encoding !== undefined && encoding.toLowerCase() !== "identity") {
    return new AppError(
      "BAD_USER_INPUT",
      `Request body could not be decoded as its Content-Encoding '${encoding.slice(0, 100)}' says; send it encoded so, or without that header.`,
    );
  }
  return new AppError("BAD_USER_INPUT", "Request body could not be read in full.");
}
