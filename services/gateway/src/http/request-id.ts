import { randomUUID } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";

const SAFE_ID = /^[A-Za-z0-9._-]{1,128}$/;

/** Keeps a caller's X-Request-Id when it is sane (so traces join up across hops), otherwise makes one. */
export function requestId(req: IncomingMessage, res: ServerResponse): string {
  const given = req.headers["x-request-id"];
  const id = typeof given === "string" && SAFE_ID.test(given) ? given : randomUUID();
  res.setHeader("X-Request-Id", id);
  return id;
}
