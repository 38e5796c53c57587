import { createSocket } from "node:dgram";
import { readFile } from "node:fs/promises";
import {
  boundedLookup,
  dnsServerLookup,
  privateAddressKind,
  resolveWebhookTarget,
  WebhookTargetError,
} from "./targets";

describe("private webhook targets", () => {
  it.each([
    ["127.0.0.1", "loopback"],
    ["10.2.3.4", "private"],
    ["172.16.0.1", "private"],
    ["192.168.1.1", "private"],
    ["169.254.169.254", "link-local (cloud metadata among them)"],
    ["100.64.0.1", "CGNAT"],
    ["0.0.0.0", "unspecified"],
    ["::1", "loopback"],
    ["::", "unspecified"],
    ["fd00::1", "unique-local"],
    ["fe80::1", "link-local"],
    ["::ffff:127.0.0.1", "loopback"],
    ["::ffff:7f00:1", "loopback"],
    ["64:ff9b::a00:1", "private"],
    // The forms a hand-kept table missed: translated (RFC 6145), local-use NAT64 (RFC 8215), the tunnels that carry
    // any IPv4 (6to4, Teredo), and the registries' other special ranges.
    ["::ffff:0:7f00:1", "loopback"],
    // Local-use NAT64 may embed the IPv4 after a /48: its last 32 bits (here 8.8.8.8) are not the target.
    ["64:ff9b:1:7f00:0:100:808:808", "local-use NAT64"],
    ["64:ff9b:1::a00:1", "local-use NAT64"],
    ["2002:7f00:1::", "6to4"],
    ["2001:0:4136:e378:8000:63bf:3fff:fdd2", "teredo"],
    ["100::1", "discard"],
    ["2001:db8::1", "reserved"],
    ["198.18.0.1", "reserved"],
    ["255.255.255.255", "broadcast"],
    ["fe80::1%eth0", "link-local"],
    // IPv4-compatible (deprecated), in both spellings: a url gives the hex one (`http://[::127.0.0.1]/` has host
    // `[::7f00:1]`), which ipaddr.js alone judged public; the dotted one it read as IPv4-mapped.
    ["::7f00:1", "IPv4-compatible (deprecated)"],
    ["::127.0.0.1", "IPv4-compatible (deprecated)"],
    ["::a9fe:a9fe", "IPv4-compatible (deprecated)"],
    ["::808:808", "IPv4-compatible (deprecated)"],
    ["::0.0.0.2", "IPv4-compatible (deprecated)"],
    ["::0.0.0.1", "loopback"],
  ])("%s is %s", (address, kind) => expect(privateAddressKind(address)).toBe(kind));

  it.each(["93.184.216.34", "8.8.8.8", "2606:4700::1111", "172.32.0.1", "::ffff:8.8.8.8", "64:ff9b::808:808"])(
    "%s is public",
    (address) => expect(privateAddressKind(address)).toBeNull(),
  );

  it("refuses an IPv4-compatible literal as a url gives its host", async () => {
    const noLookup = () => Promise.reject(new Error("an address is not looked up"));
    for (const url of ["http://[::127.0.0.1]/", "http://[::169.254.169.254]/", "http://[::10.0.0.1]:8080/"]) {
      await expect(
        resolveWebhookTarget(new URL(url).hostname, { allowPrivate: false }, noLookup),
      ).rejects.toBeInstanceOf(WebhookTargetError);
    }
  });

  it("refuses a name with any private address, and answers the address checked", async () => {
    const lookup = async (host: string) =>
      host === "mixed.example"
        ? [
            { address: "93.184.216.34", family: 4 },
            { address: "10.0.0.1", family: 4 },
          ]
        : [{ address: "93.184.216.34", family: 4 }];
    // The kind, never the address: a caller would map internal names to the addresses behind the service.
    await expect(resolveWebhookTarget("mixed.example", { allowPrivate: false }, lookup)).rejects.toThrow(
      /^mixed\.example resolves to a private address: refused in production unless WEBHOOK_ALLOW_PRIVATE_TARGETS=true$/,
    );
    await expect(resolveWebhookTarget("ok.example", { allowPrivate: false }, lookup)).resolves.toEqual({
      address: "93.184.216.34",
      family: 4,
    });
    await expect(resolveWebhookTarget("[::1]", { allowPrivate: false }, lookup)).rejects.toThrow(/loopback/);
    await expect(resolveWebhookTarget("mixed.example", { allowPrivate: true }, lookup)).resolves.toMatchObject({
      address: "93.184.216.34",
    });
  });
});

describe("bounded lookups", () => {
  /** A lookup whose calls hang until answered by hand, recording the names asked. */
  function heldLookup() {
    const asked: string[] = [];
    const pending: Array<() => void> = [];
    const lookup = (host: string) =>
      new Promise<Array<{ address: string; family: number }>>((resolve) => {
        asked.push(host);
        pending.push(() => resolve([{ address: "93.184.216.34", family: 4 }]));
      });
    return { asked, answerOne: () => pending.shift()!(), lookup };
  }

  it("runs at most maxInFlight system lookups at once; a finished one lets the next caller in", async () => {
    const held = heldLookup();
    const bounded = boundedLookup(held.lookup, 2);
    const calls = ["a.example", "b.example", "c.example"].map((host) => bounded(host));
    await Promise.resolve();
    expect(held.asked).toEqual(["a.example", "b.example"]);
    held.answerOne();
    await calls[0];
    await new Promise(setImmediate);
    expect(held.asked).toEqual(["a.example", "b.example", "c.example"]);
  });

  it("drops a caller that stops waiting before its turn: its name is never looked up", async () => {
    const held = heldLookup();
    const bounded = boundedLookup(held.lookup, 1);
    void bounded("hanging.example");
    await expect(resolveWebhookTarget("late.example", { allowPrivate: false }, bounded, 20)).rejects.toThrow(
      "looking up late.example took longer than 20 ms",
    );
    held.answerOne();
    await new Promise(setImmediate);
    expect(held.asked).toEqual(["hanging.example"]);
    // The slot freed by the hanging call serves the next caller at once.
    const next = resolveWebhookTarget("next.example", { allowPrivate: false }, bounded, 1000);
    await Promise.resolve();
    expect(held.asked).toEqual(["hanging.example", "next.example"]);
    held.answerOne();
    await expect(next).resolves.toMatchObject({ address: "93.184.216.34" });
  });
});

describe("the production lookup: DNS servers, no thread held", () => {
  /**
   * A DNS server on 127.0.0.1: answers A queries for answers.example, an empty answer for its AAAA, and nothing at all
   * for anything else (a name whose DNS never answers).
   */
  async function dnsServer() {
    const socket = createSocket("udp4");
    let queries = 0;
    socket.on("message", (query, peer) => {
      queries++;
      let end = 12;
      const labels: string[] = [];
      while (query[end]! > 0) {
        labels.push(query.subarray(end + 1, end + 1 + query[end]!).toString());
        end += query[end]! + 1;
      }
      const type = query.readUInt16BE(end + 1);
      if (labels.join(".") !== "answers.example") return;
      const question = query.subarray(12, end + 5);
      const header = Buffer.alloc(12);
      query.copy(header, 0, 0, 2); // the query's id
      header.writeUInt16BE(0x8180, 2); // a response, recursion available, no error
      header.writeUInt16BE(1, 4);
      header.writeUInt16BE(type === 1 ? 1 : 0, 6);
      const answer = Buffer.from([0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 93, 184, 216, 34]);
      socket.send(Buffer.concat([header, question, ...(type === 1 ? [answer] : [])]), peer.port, peer.address);
    });
    await new Promise<void>((resolve) => socket.bind(0, "127.0.0.1", resolve));
    return {
      server: `127.0.0.1:${socket.address().port}`,
      queries: () => queries,
      close: () => new Promise<void>((resolve) => socket.close(() => resolve())),
    };
  }

  it("answers a name's addresses from the DNS servers", async () => {
    const dns = await dnsServer();
    try {
      await expect(dnsServerLookup([dns.server])("answers.example")).resolves.toEqual([
        { address: "93.184.216.34", family: 4 },
      ]);
    } finally {
      await dns.close();
    }
  });

  it("stops asking for a name whose DNS never answers once its caller stops waiting, however many there are", async () => {
    const dns = await dnsServer();
    try {
      const lookup = dnsServerLookup([dns.server]);
      const names = Array.from({ length: 8 }, (_, i) => `never-${i}.example`);
      const lookups = names.map((name) => resolveWebhookTarget(name, { allowPrivate: false }, lookup, 100));
      for (const attempt of lookups) await expect(attempt).rejects.toThrow(/took longer than 100 ms/);
      // Eight hanging names hold none of libuv's four threads: work that needs one is not held up behind them.
      await readFile(__filename);
      expect(dns.queries()).toBeGreaterThanOrEqual(names.length);
      // The query itself ends when its caller stops waiting (c-ares would otherwise retry it for tens of seconds).
      const stop = new AbortController();
      const query = lookup("never.example", stop.signal);
      stop.abort();
      let bound: NodeJS.Timeout | undefined;
      const stillAsking = new Promise<string>((resolve) => (bound = setTimeout(resolve, 1000, "still asking")));
      await expect(Promise.race([query, stillAsking])).rejects.toMatchObject({ code: "ECANCELLED" });
      clearTimeout(bound);
    } finally {
      await dns.close();
    }
  });
});
