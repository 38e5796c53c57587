import http from "node:http";
import https from "node:https";
import type { LookupFunction } from "node:net";
import { performance } from "node:perf_hooks";
import {
  resolveWebhookTarget,
  webhookLookup,
  WebhookTargetError,
  type AddressLookup,
  type WebhookTargetPolicy,
} from "@mdp/webhooks";

/** The most of a response body read (for the delivery log's error text); the rest is not read. */
export const MAX_RESPONSE_READ = 1024;

export interface PostOutcome {
  /** the response's status; null when none came (refused, timed out, connection failed) */
  status: number | null;
  durationMs: number;
  /** why it did not succeed (bounded), null for a 2xx */
  error: string | null;
  /** the target was refused (a private address in production): retrying cannot help */
  refused: boolean;
}

/**
 * One POST of a webhook (docs/webhooks.md): to the address checked against the private-target policy (the lookup the
 * connection uses answers that address only, so a DNS answer that changes between the check and the connect, a
 * rebinding, is never followed), bounded by `timeoutMs` from the lookup's start to the response's headers,
 * redirects not followed (a 3xx is a failure), at most MAX_RESPONSE_READ bytes of the response read.
 */
export async function postWebhook(
  url: string,
  headers: Record<string, string>,
  body: string,
  options: { timeoutMs: number; policy: WebhookTargetPolicy; lookup?: AddressLookup },
): Promise<PostOutcome> {
  const started = performance.now();
  const took = () => Math.round(performance.now() - started);
  const target = new URL(url);
  let address: { address: string; family: number };
  try {
    // The lookup counts against the attempt's timeout too: a name whose DNS never answers ends the attempt in time.
    address = await resolveWebhookTarget(
      target.hostname,
      options.policy,
      options.lookup ?? webhookLookup(options.policy),
      options.timeoutMs,
    );
  } catch (error) {
    const refused = error instanceof WebhookTargetError;
    return { status: null, durationMs: took(), error: messageOf(error), refused };
  }
  const pinned: LookupFunction = (_host, opts, callback) => {
    if ((opts as { all?: boolean }).all) {
      (callback as unknown as (e: null, a: Array<{ address: string; family: number }>) => void)(null, [address]);
    } else callback(null, address.address, address.family);
  };
  const client = target.protocol === "https:" ? https : http;
  return new Promise<PostOutcome>((resolve) => {
    let settled = false;
    const done = (outcome: Omit<PostOutcome, "durationMs" | "refused">) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve({ ...outcome, durationMs: took(), refused: false });
    };
    const request = client.request(
      target,
      {
        method: "POST",
        lookup: pinned,
        agent: false,
        headers: { ...headers, "content-length": String(Buffer.byteLength(body)) },
      },
      (response) => {
        const status = response.statusCode ?? 0;
        if (status >= 200 && status < 300) {
          response.resume();
          response.on("error", () => undefined);
          request.destroy();
          done({ status, error: null });
          return;
        }
        const chunks: Buffer[] = [];
        let read = 0;
        const finish = () => {
          const text = Buffer.concat(chunks).toString("utf8").slice(0, MAX_RESPONSE_READ);
          request.destroy();
          done({ status, error: `HTTP ${status}${text ? `: ${text}` : ""}`.slice(0, 512) });
        };
        response.on("data", (chunk: Buffer) => {
          chunks.push(chunk);
          read += chunk.length;
          if (read >= MAX_RESPONSE_READ) finish();
        });
        response.on("end", finish);
        response.on("error", finish);
      },
    );
    const timer = setTimeout(
      () => {
        request.destroy();
        done({ status: null, error: `no response within ${options.timeoutMs} ms (WEBHOOK_TIMEOUT_MS)` });
      },
      Math.max(1, options.timeoutMs - took()),
    );
    request.on("error", (error) => done({ status: null, error: messageOf(error).slice(0, 512) }));
    request.end(body);
  });
}

const messageOf = (error: unknown) => (error instanceof Error ? error.message : String(error));
