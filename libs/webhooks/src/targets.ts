/**
 * Where a webhook may be sent: which addresses are private, and a url's name resolved and checked against the policy
 * within a time limit and a bound on lookups in flight. The gateway checks at subscription time, the webhook worker
 * before each POST.
 */
import { lookup as dnsLookup, Resolver } from "node:dns/promises";
import { isIP } from "node:net";
import ipaddr from "ipaddr.js";

/** The names our messages give ipaddr.js's ranges; a range not here is named as ipaddr.js names it. */
const RANGE_KINDS: Record<string, string> = {
  private: "private",
  loopback: "loopback",
  linkLocal: "link-local",
  carrierGradeNat: "CGNAT",
  unspecified: "unspecified",
  broadcast: "broadcast",
  multicast: "multicast",
  uniqueLocal: "unique-local",
  deprecatedSiteLocal: "site-local",
};

/** IPv6 forms that carry an IPv4 address (mapped, translated, NAT64): judged as the IPv4 they carry. */
const CARRIES_IPV4 = new Set(["ipv4Mapped", "rfc6145", "rfc6052"]);

/**
 * Why an address may not be a webhook's target in production: anything but a public unicast address, as ipaddr.js
 * classes the IANA special-purpose registries (loopback, RFC 1918, link-local with the cloud metadata address,
 * unique-local, CGNAT, multicast, reserved, documentation, benchmarking, 6to4 and Teredo tunnels, which can carry any
 * IPv4 ...). IPv4-mapped, translated and NAT64 IPv6 forms are judged as the IPv4 they carry, so a DNS64 network's
 * public names still pass (the well-known 64:ff9b::/96; local-use NAT64 prefixes are refused). Null: a public address.
 * ipaddr.js rather than our own table: it follows the registries, and a hand-kept table missed `::ffff:0:a.b.c.d`.
 */
export function privateAddressKind(address: string): string | null {
  const bare = address.split("%")[0]!; // a scope id (fe80::1%eth0) does not change the address's kind
  const family = isIP(bare);
  if (!family) return "not an IP address";
  // IPv6 in WHATWG's hex form first: ipaddr.js reads `::a.b.c.d` (IPv4-compatible) as `::ffff:a.b.c.d`, so the two
  // spellings of one address were judged apart (`::127.0.0.1` loopback, `::7f00:1`, a url's form of it, public).
  let parsed = ipaddr.parse(family === 6 ? new URL(`http://[${bare}]/`).hostname.slice(1, -1) : bare);
  if (parsed.kind() === "ipv6") {
    const words = (parsed as ipaddr.IPv6).parts;
    // ::/96 but :: and ::1: IPv4-compatible, deprecated (RFC 4291 2.5.5.1), tunnelled to the IPv4 by some stacks.
    if (words.slice(0, 6).every((w) => w === 0) && (words[6] !== 0 || words[7]! > 1))
      return "IPv4-compatible (deprecated)";
  }
  let range = parsed.range();
  if (parsed.kind() === "ipv6" && CARRIES_IPV4.has(range)) {
    const words = (parsed as ipaddr.IPv6).parts;
    // Local-use NAT64 (64:ff9b:1::/48, RFC 8215) may put the IPv4 after a prefix of any length: where it sits in the
    // address is the network's choice, so its last 32 bits prove nothing.
    if (words[0] === 0x64 && words[1] === 0xff9b && words[2] === 1) return "local-use NAT64";
    parsed = new ipaddr.IPv4([words[6]! >> 8, words[6]! & 255, words[7]! >> 8, words[7]! & 255]);
    range = parsed.range();
  }
  if (range === "unicast") return null;
  if (range === "linkLocal" && parsed.kind() === "ipv4") return "link-local (cloud metadata among them)";
  return RANGE_KINDS[range] ?? range;
}

/** How a webhook's url is checked: in production, private targets are refused unless WEBHOOK_ALLOW_PRIVATE_TARGETS. */
export interface WebhookTargetPolicy {
  allowPrivate: boolean;
}

export function webhookTargetPolicy(config: {
  NODE_ENV: string;
  WEBHOOK_ALLOW_PRIVATE_TARGETS: boolean;
}): WebhookTargetPolicy {
  return { allowPrivate: config.NODE_ENV !== "production" || config.WEBHOOK_ALLOW_PRIVATE_TARGETS };
}

/** The addresses of a name; `signal` aborts when its caller stops waiting. */
export type AddressLookup = (host: string, signal?: AbortSignal) => Promise<Array<{ address: string; family: number }>>;

/**
 * `lookup` with at most `maxInFlight` calls running at once, and callers over that waiting in turn (or until their
 * signal aborts). A getaddrinfo call holds one of libuv's threads (four by default, shared with fs, crypto, zlib and
 * every other lookup) until the system's resolver gives up, tens of seconds for a name whose DNS never answers: a
 * timeout only stops waiting for it. Unbounded, one subscriber's such names would take every thread of the process.
 */
export function boundedLookup(
  lookup: (host: string) => Promise<Array<{ address: string; family: number }>>,
  maxInFlight: number,
): AddressLookup {
  let running = 0;
  const waiting: Array<() => void> = [];
  // A finished call hands its slot to the next caller waiting, if any.
  const release = () => {
    const next = waiting.shift();
    if (next) next();
    else running--;
  };
  return async (host, signal) => {
    if (running < maxInFlight) running++;
    else {
      signal?.throwIfAborted();
      await new Promise<void>((resolve, reject) => {
        const go = () => {
          signal?.removeEventListener("abort", drop);
          resolve();
        };
        const drop = () => {
          waiting.splice(waiting.indexOf(go), 1);
          reject(signal!.reason as Error);
        };
        waiting.push(go);
        signal?.addEventListener("abort", drop, { once: true });
      });
    }
    try {
      return await lookup(host);
    } finally {
      release();
    }
  };
}

/** The system's resolver (getaddrinfo: /etc/hosts, search domains): at most half of libuv's four threads at once. */
export const systemLookup: AddressLookup = boundedLookup((host) => dnsLookup(host, { all: true }), 2);

/**
 * A name's A and AAAA records from DNS servers (c-ares: `servers`, or /etc/resolv.conf's), asked without a libuv
 * thread and cancelled when the caller stops waiting, so no subscriber's names, however many never answer, hold
 * anything another subscriber needs. It reads no /etc/hosts and no search domains: a public target needs neither.
 */
export function dnsServerLookup(servers?: string[]): AddressLookup {
  return async (host, signal) => {
    const resolver = new Resolver({ tries: 2 });
    if (servers) resolver.setServers(servers);
    const cancel = () => resolver.cancel();
    signal?.addEventListener("abort", cancel, { once: true });
    try {
      const [v4, v6] = await Promise.allSettled([resolver.resolve4(host), resolver.resolve6(host)]);
      const addresses = [
        ...(v4.status === "fulfilled" ? v4.value.map((address) => ({ address, family: 4 })) : []),
        ...(v6.status === "fulfilled" ? v6.value.map((address) => ({ address, family: 6 })) : []),
      ];
      if (addresses.length === 0 && v4.status === "rejected") throw v4.reason as Error;
      return addresses;
    } finally {
      signal?.removeEventListener("abort", cancel);
    }
  };
}

const publicDnsLookup = dnsServerLookup();

/**
 * How webhooks look names up under `policy`: where private targets are refused (production), from DNS servers
 * (dnsServerLookup), since a public target's name is in public DNS; where they are allowed, with the system's
 * resolver, so a receiver inside the network found through /etc/hosts or a search domain still is (systemLookup).
 */
export function webhookLookup(policy: WebhookTargetPolicy): AddressLookup {
  return policy.allowPrivate ? systemLookup : publicDnsLookup;
}

/**
 * The address to connect to for `host`: every address it resolves to is checked (a name with one private address
 * among public ones is refused whole), and the first is answered, so the connection goes to the address checked (no
 * second lookup a DNS rebinding could answer differently). Throws a WebhookTargetError saying why; a plain Error when
 * the lookup fails or takes longer than `timeoutMs` (a name whose DNS servers never answer, a subscriber's own doing,
 * must not hold a delivery slot or a request past the bound every other step keeps).
 */
export async function resolveWebhookTarget(
  host: string,
  policy: WebhookTargetPolicy,
  lookup: AddressLookup,
  timeoutMs?: number,
): Promise<{ address: string; family: number }> {
  const bare = host.startsWith("[") && host.endsWith("]") ? host.slice(1, -1) : host;
  const addresses = isIP(bare)
    ? [{ address: bare, family: isIP(bare) }]
    : await withinTime((signal) => lookup(bare, signal), timeoutMs, bare);
  if (addresses.length === 0) throw new WebhookTargetError(`${host} resolves to no address`);
  if (!policy.allowPrivate) {
    for (const { address } of addresses) {
      const kind = privateAddressKind(address);
      if (kind) {
        // A name's private address is not told: anyone may subscribe, and the answer would map internal names to the
        // addresses of the network behind the service. An address given in the url is the caller's own.
        const what = isIP(bare) ? `${host} is` : `${host} resolves to`;
        throw new WebhookTargetError(
          `${what} a ${kind} address: refused in production unless WEBHOOK_ALLOW_PRIVATE_TARGETS=true`,
        );
      }
    }
  }
  return addresses[0]!;
}

function withinTime<T>(work: (signal?: AbortSignal) => Promise<T>, timeoutMs: number | undefined, host: string) {
  if (timeoutMs === undefined) return work();
  const stop = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => {
        const error = new Error(`looking up ${host} took longer than ${timeoutMs} ms`);
        stop.abort(error);
        reject(error);
      },
      Math.max(1, timeoutMs),
    );
  });
  return Promise.race([work(stop.signal), late]).finally(() => clearTimeout(timer));
}

export class WebhookTargetError extends Error {
  override name = "WebhookTargetError";
}
