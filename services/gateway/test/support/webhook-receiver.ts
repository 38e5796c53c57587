/** A real HTTP receiver of webhooks for tests: records each request; answers as `respond` says (default 200). */
import http from "node:http";
import type { AddressInfo } from "node:net";

export interface Received {
  headers: http.IncomingHttpHeaders;
  body: string;
  at: number;
}

export interface Receiver {
  url: string;
  received: Received[];
  /** how the next request is answered: a status, or "hang" (no answer until release) */
  respond: (request: Received, index: number) => number | "hang";
  /** answers every hanging request (200) */
  release(): void;
  close(): Promise<void>;
}

export async function startReceiver(path = "/hook"): Promise<Receiver> {
  const hanging: http.ServerResponse[] = [];
  const receiver: Receiver = {
    url: "",
    received: [],
    respond: () => 200,
    release() {
      for (const res of hanging.splice(0)) res.writeHead(200).end();
    },
    close: () =>
      new Promise<void>((resolve) => {
        receiver.release();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const request = { headers: req.headers, body: Buffer.concat(chunks).toString("utf8"), at: Date.now() };
      const index = receiver.received.push(request) - 1;
      const answer = receiver.respond(request, index);
      if (answer === "hang") hanging.push(res);
      else res.writeHead(answer, { "content-type": "text/plain" }).end(answer >= 300 ? `refused ${index}` : "ok");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  receiver.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}${path}`;
  return receiver;
}
