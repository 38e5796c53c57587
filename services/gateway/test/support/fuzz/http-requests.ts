/** The fuzz test's HTTP requests (fuzz.int.spec.ts): routes, actions and valid bodies, then mutations of them. */
import { gzipSync } from "node:zlib";
import fc from "fast-check";
import { DATASET, type FuzzRequest } from "./fuzz-request";
import { deepJsonText, hostileJson, hostileKey, hostileString } from "./hostile-values";

export const validProposal = (over: Record<string, unknown> = {}) => ({
  entityType: "dataset",
  entityUrn: DATASET,
  aspectName: "datasetProperties",
  changeType: "UPSERT",
  aspect: { contentType: "application/json", value: JSON.stringify({ description: "fuzz", customProperties: {} }) },
  ...over,
});

export const ACTIONS: Record<string, Record<string, () => Record<string, unknown>>> = {
  "/aspects": {
    ingestProposal: () => ({ proposal: validProposal() }),
    ingestProposalBatch: () => ({
      proposals: [
        validProposal(),
        validProposal({
          aspectName: "datasetProfile",
          aspect: {
            contentType: "application/json",
            value: JSON.stringify({ timestampMillis: 1_700_000_000_000, rowCount: 3 }),
          },
        }),
      ],
    }),
    getTimeseriesAspectValues: () => ({ urn: DATASET, entity: "dataset", aspect: "datasetProfile", limit: 10 }),
  },
  "/operations": {
    truncateTimeseriesAspect: () => ({
      entityType: "dataset",
      aspect: "datasetProfile",
      endTimeMillis: 1_600_000_000_000,
    }),
    getTaskStatus: () => ({ taskId: "1" }),
    cancelTask: () => ({ taskId: "1" }),
    listTasks: () => ({ type: "TRUNCATE_TIMESERIES", state: "waiting", createdBy: "urn:li:corpuser:admin", count: 5 }),
    getIndexSizes: () => ({}),
  },
  "/test": {
    evaluate: () => ({ urn: DATASET, push: false }),
    batchEvaluate: () => ({ urns: [DATASET], push: false }),
  },
};
export const ODD_ACTIONS = [
  "",
  "__proto__",
  "constructor",
  "hasOwnProperty",
  "valueOf",
  "toString",
  "__defineGetter__",
  "EVALUATE",
  "evaluate ",
  "%zz",
  "%00",
];

/** Replaces, removes or adds one field somewhere in a body (at the top, or one level down). */
export function mutateBody(body: Record<string, unknown>, how: number, key: string, value: unknown): unknown {
  const copy = structuredClone(body);
  const keys = Object.keys(copy);
  const target = keys[how % Math.max(keys.length, 1)];
  switch (how % 7) {
    case 0: // wrong type or hostile value for a field
      if (target) copy[target] = value;
      return copy;
    case 1: // a field missing
      if (target) delete copy[target];
      return copy;
    case 2: // an extra field, maybe a prototype-ish one (JSON.parse makes it an own property)
      return JSON.parse(
        JSON.stringify(copy)
          .replace(/^\{/, `{${JSON.stringify(key)}:${JSON.stringify(value) ?? "null"},`)
          .replace(/,\}$/, "}"),
      );
    case 3: {
      // one level down: in the proposal(s), or the first item of a list
      const inner = target ? copy[target] : undefined;
      const item = Array.isArray(inner) ? inner[0] : inner;
      if (item && typeof item === "object") {
        const innerKeys = Object.keys(item);
        (item as Record<string, unknown>)[innerKeys[how % innerKeys.length] ?? key] = value;
      }
      return copy;
    }
    case 4: // the aspect's value: a JSON string of anything
      if (copy.proposal && typeof copy.proposal === "object") {
        (copy.proposal as { aspect: { value: unknown } }).aspect.value =
          typeof value === "string" ? value : JSON.stringify(value);
      }
      return copy;
    case 5: // the whole body is something else
      return value;
    default:
      return copy;
  }
}

export const CONTENT_TYPES = [
  "application/json",
  "application/json; charset=utf-8",
  "application/json; charset=utf-16",
  "application/json; charset=latin1",
  "application/json; charset=nope",
  "text/plain",
  "application/x-www-form-urlencoded",
  "multipart/form-data; boundary=x",
  "application/xml",
  "application/json, text/plain",
  "*/*",
  "",
  ";;;",
];
export const ENCODINGS = ["gzip", "deflate", "br", "identity", "gzip, gzip", "compress", "x-nope", "GZIP"];

export interface BodyShape {
  text: string;
  contentType: string | null;
  encoding: string | null;
}

/** How the body travels: as JSON mostly, else truncated, deep, of another type or with a (wrong) encoding. */
export function bodyArb(valid: () => unknown): fc.Arbitrary<BodyShape> {
  const mutated = fc.tuple(fc.nat(), hostileKey, hostileJson).map(([how, key, value]) => {
    const base = valid();
    return (
      JSON.stringify(
        base && typeof base === "object" && !Array.isArray(base)
          ? mutateBody(base as Record<string, unknown>, how, key, value)
          : value,
      ) ?? "null"
    );
  });
  const text = fc.oneof(
    { weight: 6, arbitrary: mutated },
    { weight: 1, arbitrary: fc.constant(JSON.stringify(valid())) },
    // truncated JSON
    { weight: 2, arbitrary: fc.tuple(mutated, fc.nat()).map(([t, cut]) => t.slice(0, cut % Math.max(t.length, 1))) },
    { weight: 1, arbitrary: deepJsonText },
    {
      weight: 1,
      arbitrary: fc.constantFrom(
        "",
        "null",
        "[]",
        "1",
        '"x"',
        "{",
        '{"a":1,"a":2}',
        '{"__proto__":{"admin":true}}',
        "\ufeff{}",
        "{}\u0000",
        "1e999999",
        "-",
        '{"a":1e999999}',
      ),
    },
  );
  return fc.record({
    text,
    contentType: fc.oneof(
      { weight: 8, arbitrary: fc.constant("application/json") },
      { weight: 2, arbitrary: fc.constantFrom<string | null>(null, ...CONTENT_TYPES) },
    ),
    encoding: fc.oneof(
      { weight: 9, arbitrary: fc.constant<string | null>(null) },
      { weight: 2, arbitrary: fc.constantFrom<string | null>(...ENCODINGS, "gzip-real") },
    ),
  });
}

export function encodeBody(shape: BodyShape, headers: Record<string, string>): Buffer {
  let bytes = Buffer.from(shape.text, "utf8");
  if (shape.contentType !== null) headers["content-type"] = shape.contentType;
  if (shape.encoding === "gzip-real") {
    bytes = gzipSync(bytes);
    headers["content-encoding"] = "gzip";
  } else if (shape.encoding !== null) {
    headers["content-encoding"] = shape.encoding; // a header that does not match the body
  }
  return bytes;
}

export const PREFIXES = ["/gms", "/api/gms", "/GMS", "/api/gms/", "//gms"];
export const METHODS = ["POST", "GET", "PUT", "PATCH", "DELETE", "OPTIONS", "HEAD", "PROPFIND", "FOO"];

/** Percent-encoded text; a lone surrogate (which encodeURIComponent refuses) as its raw UTF-8 bytes. */
export function percentEncoded(text: string, keepSlashes: boolean): string {
  try {
    const encoded = encodeURIComponent(text.slice(0, 3000));
    return keepSlashes ? encoded.replace(/%2F/g, "/") : encoded;
  } catch {
    return "%ED%A0%80";
  }
}

export const percentMess = fc.oneof(
  fc.constantFrom("%", "%zz", "%C0%AF", "%00", "%ff%fe", "%2e%2e%2f", "%25", "%E2%80%AE", "%uD800", "a%"),
  hostileString.map((s) => percentEncoded(s, true)),
  hostileString.map((s) => percentEncoded(s, false)),
);

export const actionRequest: fc.Arbitrary<Omit<FuzzRequest, "auth">> = fc
  .tuple(
    fc.constantFrom(...Object.keys(ACTIONS)),
    fc.nat(),
    fc.constantFrom(...PREFIXES),
    fc.oneof({ weight: 8, arbitrary: fc.constant("POST") }, { weight: 1, arbitrary: fc.constantFrom(...METHODS) }),
    fc.oneof(
      { weight: 8, arbitrary: fc.constant<string | null>(null) },
      { weight: 2, arbitrary: fc.constantFrom<string | null>(...ODD_ACTIONS) },
      { weight: 1, arbitrary: percentMess.map((s): string | null => s) },
    ),
    fc.constantFrom("", "", "", "&action=evaluate", "&action[]=x", "&action[a]=b", "&x=%zz", "&action"),
  )
  .chain(([resource, pick, prefix, method, odd, extraQuery]) => {
    const names = Object.keys(ACTIONS[resource]!);
    const name = names[pick % names.length]!;
    return bodyArb(ACTIONS[resource]![name]!).map((shape) => {
      const headers: Record<string, string> = {};
      const body = method === "GET" || method === "HEAD" ? undefined : encodeBody(shape, headers);
      const action = odd ?? name;
      return {
        kind: `http ${resource}?action=${name}`,
        method,
        path: `${prefix.replace(/\/$/, "")}${resource}?action=${action}${extraQuery}`,
        headers,
        body,
      };
    });
  });

export const getRequest: fc.Arbitrary<Omit<FuzzRequest, "auth">> = fc
  .tuple(
    fc.constantFrom("/entities/", "/operations/tasks/", "/entities", "/operations/tasks", "/nothing/"),
    fc.oneof(percentMess, fc.constant(encodeURIComponent(DATASET)), fc.constant("1")),
    fc.constantFrom(...PREFIXES),
    fc.oneof({ weight: 6, arbitrary: fc.constant("GET") }, { weight: 1, arbitrary: fc.constantFrom(...METHODS) }),
  )
  .map(([route, param, prefix, method]) => ({
    kind: `http ${route}:param`,
    method,
    path: `${prefix.replace(/\/$/, "")}${route}${param}`,
    headers: {},
  }));

export const otherRequest: fc.Arbitrary<Omit<FuzzRequest, "auth">> = fc
  .tuple(
    fc.constantFrom(
      "/health",
      "/ready",
      "/metrics",
      "/admin/queues",
      "/admin/queues/api/queues",
      "/",
      "/api/graphql/",
      "/GRAPHQL",
      "/favicon.ico",
    ),
    fc.constantFrom(...METHODS),
    fc.constantFrom("", "?x=%zz", "?access_token=abc", `?${"a=1&".repeat(2000)}`, "?query={__typename}"),
  )
  .map(([route, method, query]) => ({ kind: `http ${route}`, method, path: `${route}${query}`, headers: {} }));
