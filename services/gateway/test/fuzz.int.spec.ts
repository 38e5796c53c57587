/**
 * Fuzz test of the real gateway (a process of its own, with a real evaluation worker, over real HTTP): thousands of
 * malformed HTTP and GraphQL requests generated with fast-check from the gateway's own GraphQL schema (introspected)
 * and from its list of HTTP routes, actions and bodies. No answer may be a 5xx (nor a GraphQL INTERNAL_SERVER_ERROR),
 * and the gateway must end healthy, its memory within bounds.
 *
 * Deterministic: FUZZ_SEED (default below) and FUZZ_RUNS choose the requests; they are sent one at a time, so a seed
 * replays the same run. Every distinct failure is listed with one request that shows it.
 */
import http from "node:http";
import { gzipSync } from "node:zlib";
import fc from "fast-check";
import {
  buildClientSchema,
  getIntrospectionQuery,
  getNamedType,
  getNullableType,
  isEnumType,
  isInputObjectType,
  isListType,
  isNonNullType,
  isObjectType,
  isScalarType,
  isInterfaceType,
  type GraphQLArgument,
  type GraphQLField,
  type GraphQLInputType,
  type GraphQLOutputType,
  type GraphQLSchema,
  type IntrospectionQuery,
} from "graphql";
import { DEVELOPMENT_SECRETS } from "@mdp/core";
import { createTestDatabase } from "@mdp/db/testing";
import {
  freePort,
  startService,
  systemClient,
  uniqueName,
  waitForOutput,
  waitUntilReady,
  type RunningService,
} from "../../../test/support/services";
import { Hs256 } from "../src/tokens/jwt";

const SEED = Number(process.env.FUZZ_SEED ?? 170_017);
const RUNS = Number(process.env.FUZZ_RUNS ?? 3000);
/**
 * A sanity bound, not the budget: the 400 MB gateway budget is measured over a 3-minute run elsewhere; after these
 * requests RSS is ~380 MB, most of it the young generation's 64 MiB semi-spaces not yet collected.
 */
const RSS_SANITY_BYTES = 512 * 1024 * 1024;
const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";
const ROOT = "urn:li:corpuser:admin";
const HOLDER = "urn:li:corpuser:fuzz-holder";
const NOBODY = "urn:li:corpuser:fuzz-nobody";
const DATASET = "urn:li:dataset:(urn:li:dataPlatform:hive,fuzz.table,PROD)";

/** A request as sent, raw: the body is bytes so that it can be truncated, mis-encoded or not JSON at all. */
interface FuzzRequest {
  kind: string;
  method: string;
  path: string;
  auth: string;
  headers: Record<string, string>;
  body?: Buffer;
}

interface Answer {
  status: number;
  text: string;
}

// ---------------------------------------------------------------------------------------------------------------
// Hostile values

const HOSTILE_STRINGS = [
  "",
  " ",
  "\u0000",
  "a\u0000b",
  "\ud800",
  "\udfff\ud800",
  "\u202e\u200b\ufeff",
  "𝕳𝖊𝖑𝖑𝖔 👩‍👩‍👧‍👦",
  "__proto__",
  "constructor",
  "prototype",
  "hasOwnProperty",
  "toString",
  "valueOf",
  "'; DROP TABLE access_tokens; --",
  "%",
  "%zz",
  "%00",
  "../../etc/passwd",
  "${jndi:ldap://x}",
  "{{7*7}}",
  "urn:",
  "urn:li:",
  "urn:li:dataset:(",
  "urn:li:dataset:()",
  "urn:li:dataset:(urn:li:dataPlatform:hive,a,PROD",
  "urn:li:dataset:(urn:li:dataPlatform:hive,a,PROD))",
  "urn:li:corpuser:",
  "urn:li:corpuser:admin",
  "urn:li:test:",
  "urn:li:test:nope",
  "urn:li:dataset:(urn:li:dataPlatform:hive,fuzz.table,PROD)",
  "urn:xx:dataset:(urn:li:dataPlatform:hive,a,PROD)",
  "urn:li:dataset:(urn:li:dataPlatform:hive,\u0000,PROD)",
  "-1",
  "1e309",
  "NaN",
  "true",
  "null",
];

const hostileString: fc.Arbitrary<string> = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(...HOSTILE_STRINGS) },
  { weight: 2, arbitrary: fc.string({ maxLength: 40 }) },
  { weight: 2, arbitrary: fc.string({ unit: "grapheme", maxLength: 20 }) },
  // any UTF-16 code unit, lone surrogates included
  {
    weight: 2,
    arbitrary: fc.string({
      unit: fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c)),
      maxLength: 20,
    }),
  },
  // long: past btree rows (~2.7 KB), names, ids, and 1 MiB bodies
  {
    weight: 1,
    arbitrary: fc
      .tuple(
        fc.constantFrom("a", "urn:li:corpuser:", "urn:li:dataset:(", "é", "😀", "\u0000"),
        fc.integer({ min: 200, max: 400_000 }),
      )
      .map(([unit, length]) => unit.repeat(Math.ceil(length / unit.length))),
  },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      "a".repeat(2_700),
      `urn:li:corpuser:${"x".repeat(3_000)}`,
      `urn:li:test:${"t".repeat(5000)}`,
    ),
  },
);

const hostileNumber: fc.Arbitrary<number> = fc.oneof(
  fc.integer(),
  fc.constantFrom(
    0,
    -0,
    -1,
    1,
    2 ** 31,
    2 ** 31 - 1,
    -(2 ** 31),
    2 ** 53,
    2 ** 53 + 2,
    -(2 ** 53),
    1e21,
    1e308,
    5e-324,
    0.5,
  ),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
);

/** Any JSON value, with keys that mean something to JavaScript objects. */
const hostileKey = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.constantFrom(
      "__proto__",
      "constructor",
      "prototype",
      "toString",
      "hasOwnProperty",
      "valueOf",
      "",
      "$where",
    ),
  },
  { weight: 2, arbitrary: fc.string({ maxLength: 10 }) },
);
const { json: hostileJson } = fc.letrec<{ json: unknown }>((tie) => ({
  json: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    hostileString,
    hostileNumber,
    fc.boolean(),
    fc.constant(null),
    fc.array(tie("json"), { maxLength: 4 }),
    fc.dictionary(hostileKey, tie("json"), { maxKeys: 4 }),
  ),
}));

/** JSON text nested `depth` levels, as a parser meets it (built as text: no recursion here). */
const deepJsonText = fc
  .tuple(fc.integer({ min: 100, max: 200_000 }), fc.constantFrom("[", '{"a":', '{"not":', '{"and":['))
  .map(([depth, open]) => {
    const close = open === "[" ? "]" : open === '{"and":[' ? "]}" : "}";
    return open.repeat(depth) + "1" + close.repeat(depth);
  });

// ---------------------------------------------------------------------------------------------------------------
// HTTP: routes, actions and valid bodies, then mutations of them

const validProposal = (over: Record<string, unknown> = {}) => ({
  entityType: "dataset",
  entityUrn: DATASET,
  aspectName: "datasetProperties",
  changeType: "UPSERT",
  aspect: { contentType: "application/json", value: JSON.stringify({ description: "fuzz", customProperties: {} }) },
  ...over,
});

const ACTIONS: Record<string, Record<string, () => Record<string, unknown>>> = {
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
const ODD_ACTIONS = [
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
function mutateBody(body: Record<string, unknown>, how: number, key: string, value: unknown): unknown {
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

const CONTENT_TYPES = [
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
const ENCODINGS = ["gzip", "deflate", "br", "identity", "gzip, gzip", "compress", "x-nope", "GZIP"];

interface BodyShape {
  text: string;
  contentType: string | null;
  encoding: string | null;
}

/** How the body travels: as JSON mostly, else truncated, deep, of another type or with a (wrong) encoding. */
function bodyArb(valid: () => unknown): fc.Arbitrary<BodyShape> {
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

function encodeBody(shape: BodyShape, headers: Record<string, string>): Buffer {
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

const PREFIXES = ["/gms", "/api/gms", "/GMS", "/api/gms/", "//gms"];
const METHODS = ["POST", "GET", "PUT", "PATCH", "DELETE", "OPTIONS", "HEAD", "PROPFIND", "FOO"];

/** Percent-encoded text; a lone surrogate (which encodeURIComponent refuses) as its raw UTF-8 bytes. */
function percentEncoded(text: string, keepSlashes: boolean): string {
  try {
    const encoded = encodeURIComponent(text.slice(0, 3000));
    return keepSlashes ? encoded.replace(/%2F/g, "/") : encoded;
  } catch {
    return "%ED%A0%80";
  }
}

const percentMess = fc.oneof(
  fc.constantFrom("%", "%zz", "%C0%AF", "%00", "%ff%fe", "%2e%2e%2f", "%25", "%E2%80%AE", "%uD800", "a%"),
  hostileString.map((s) => percentEncoded(s, true)),
  hostileString.map((s) => percentEncoded(s, false)),
);

const actionRequest: fc.Arbitrary<Omit<FuzzRequest, "auth">> = fc
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

const getRequest: fc.Arbitrary<Omit<FuzzRequest, "auth">> = fc
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

const otherRequest: fc.Arbitrary<Omit<FuzzRequest, "auth">> = fc
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

// ---------------------------------------------------------------------------------------------------------------
// GraphQL: operations generated from the introspected schema

/** A GraphQL literal for `type`, right-typed or not; `$` variables are collected in `vars`. */
function graphqlValueArb(schema: GraphQLSchema, type: GraphQLInputType, depth: number): fc.Arbitrary<string> {
  const wrong = fc.oneof(
    hostileString.map((s) => JSON.stringify(s.slice(0, 5000))),
    hostileNumber.map((n) => (Number.isFinite(n) ? String(n) : "0")),
    fc.constantFrom(
      "null",
      "true",
      "[]",
      "{}",
      "NOPE",
      '"\\u0000"',
      "1e999",
      "99999999999999999999999",
      '"""block"""',
      "$undefinedVar",
    ),
  );
  if (depth > 4) return wrong;
  const nullable = getNullableType(type);
  let right: fc.Arbitrary<string>;
  if (isListType(nullable)) {
    right = fc
      .array(graphqlValueArb(schema, nullable.ofType, depth + 1), { maxLength: 3 })
      .map((items) => `[${items.join(", ")}]`);
  } else if (isInputObjectType(nullable)) {
    const fields = Object.values(nullable.getFields());
    right = fc
      .tuple(
        ...fields.map((field) =>
          fc
            .tuple(fc.integer({ min: 0, max: 9 }), graphqlValueArb(schema, field.type, depth + 1))
            .map(([roll, value]) =>
              roll === 0 && isNonNullType(field.type) ? "" : roll === 0 ? "" : `${field.name}: ${value}`,
            ),
        ),
        fc.oneof(
          { weight: 5, arbitrary: fc.constant("") },
          { weight: 1, arbitrary: hostileKey.map((k) => `${/^[_A-Za-z][_0-9A-Za-z]*$/.test(k) ? k : "extra"}: 1`) },
        ),
      )
      .map((parts) => `{${parts.filter(Boolean).join(", ")}}`);
  } else if (isEnumType(nullable)) {
    right = fc.oneof(
      fc.constantFrom(...nullable.getValues().map((v) => v.name)),
      fc.constantFrom("NOPE", "__proto__", '"ONE_HOUR"'),
    );
  } else if (
    isScalarType(nullable) &&
    (nullable.name === "Int" || nullable.name === "Float" || nullable.name === "Long")
  ) {
    right = hostileNumber.map((n) =>
      Number.isFinite(n) ? (nullable.name === "Int" ? String(Math.trunc(n)) : String(n)) : "0",
    );
  } else if (isScalarType(nullable) && nullable.name === "Boolean") {
    right = fc.constantFrom("true", "false");
  } else {
    right = fc.oneof(
      { weight: 3, arbitrary: hostileString.map((s) => JSON.stringify(s.slice(0, 300_000))) },
      {
        weight: 1,
        arbitrary: fc.constantFrom(
          JSON.stringify(DATASET),
          JSON.stringify(ROOT),
          JSON.stringify(HOLDER),
          '"urn:li:test:fuzz"',
        ),
      },
      { weight: 1, arbitrary: testDefinitionText.map((s) => JSON.stringify(s)) },
    );
  }
  return fc.oneof({ weight: 4, arbitrary: right }, { weight: 1, arbitrary: wrong });
}

/** Test definitions: valid-looking, deep, wide, long paths, hostile regexes. */
const testDefinitionText: fc.Arbitrary<string> = fc.oneof(
  fc
    .tuple(
      fc.constantFrom(
        "urn",
        "datasetProperties.description",
        "ownership.owners.owner",
        "a".repeat(100),
        Array(800).fill("p").join("."),
      ),
      fc.constantFrom("equals", "regex_match", "contains_str", "greater_than", "exists", "nope"),
      fc.constantFrom("x", "^(a+)+$", "(", "(?=a)", "a{99999}", "1e999", "\\1"),
    )
    .map(([property, operator, value]) =>
      JSON.stringify({ on: { types: ["dataset"] }, rules: [{ property, operator, value }] }),
    ),
  fc
    .integer({ min: 10, max: 20_000 })
    .map(
      (n) =>
        `{"on":{"types":["dataset"]},"rules":${'{"not":'.repeat(n)}{"property":"urn","operator":"exists"}${"}".repeat(n)}}`,
    ),
  fc.constantFrom(
    "on: [",
    "a: &a [*a, *a]\nb: &b [*a, *a]",
    "!!js/function 'x'",
    "{}",
    "[]",
    "rules: 1",
    "--- \n...\n",
  ),
);

function selectionArb(type: GraphQLOutputType, depth: number): fc.Arbitrary<string> {
  const named = getNamedType(type);
  if (!isObjectType(named) && !isInterfaceType(named)) return fc.constant("");
  const fields = Object.values(named.getFields()).filter((f) => f.args.every((a) => !isNonNullType(a.type)));
  if (depth > 3 || fields.length === 0) return fc.constant("{ __typename }");
  return fc
    .tuple(
      fc.subarray(fields, { minLength: 1, maxLength: Math.min(fields.length, 4) }),
      fc.constantFrom(
        "",
        "",
        "",
        "__typename",
        "nope",
        "__schema { queryType { name } }",
        "a: __typename b: __typename",
      ),
    )
    .chain(([picked, extra]) =>
      fc
        .tuple(...picked.map((f) => selectionArb(f.type, depth + 1).map((sub) => `${f.name} ${sub}`)))
        .map((parts) => `{ ${[...parts, extra].join(" ")} }`),
    );
}

function fieldCallArb(schema: GraphQLSchema, field: GraphQLField<unknown, unknown>): fc.Arbitrary<string> {
  const args = fc.tuple(
    ...field.args.map((arg: GraphQLArgument) =>
      fc
        .tuple(fc.integer({ min: 0, max: 9 }), graphqlValueArb(schema, arg.type, 0))
        .map(([roll, value]) => (roll === 0 ? "" : `${arg.name}: ${value}`)),
    ),
    fc.oneof(
      { weight: 6, arbitrary: fc.constant("") },
      { weight: 1, arbitrary: fc.constantFrom("extra: 1", "input: {}", "urn: null") },
    ),
  );
  return fc.tuple(args, selectionArb(field.type, 1)).map(([parts, sub]) => {
    const list = parts.filter(Boolean).join(", ");
    return `${field.name}${list ? `(${list})` : ""} ${sub}`;
  });
}

interface GraphQLShape {
  document: string;
  variables?: unknown;
  operationName?: unknown;
  envelope: number;
}

function graphqlArb(schema: GraphQLSchema): fc.Arbitrary<Omit<FuzzRequest, "auth">> {
  const roots = [
    ["query", schema.getQueryType()],
    ["mutation", schema.getMutationType()],
  ] as const;
  const operation = fc.constantFrom(...roots.filter(([, t]) => t)).chain(([keyword, root]) => {
    const fields = Object.values(root!.getFields());
    return fc
      .tuple(fc.constantFrom(...fields), fc.nat({ max: 2 }))
      .chain(([field, more]) =>
        fc.tuple(
          fieldCallArb(schema, field),
          ...Array.from({ length: more }, () => fc.constantFrom(...fields).chain((f) => fieldCallArb(schema, f))),
        ),
      )
      .map((calls) => ({ keyword, calls, name: calls[0]!.split(/[ (]/)[0] }));
  });
  const document: fc.Arbitrary<GraphQLShape> = fc.oneof(
    // schema-driven operations, with aliases and directives sometimes
    {
      weight: 8,
      arbitrary: fc
        .tuple(
          operation,
          fc.nat({ max: 5 }),
          fc.constantFrom("", "@include(if: true)", "@skip(if: false)", "@nope", "@include(if: $x)", "@deprecated"),
        )
        .map(([op, roll, directive]) => {
          const calls = op.calls.map((call, i) =>
            (roll === 1 ? `a${i}: ${call}` : call).replace(/ \{/, ` ${directive} {`),
          );
          return {
            document: `${op.keyword} ${roll === 2 ? "Op" : ""} { ${calls.join(" ")} }`,
            envelope: roll === 2 ? 1 : 0,
          };
        }),
    },
    // the same, truncated or with bytes flipped
    {
      weight: 2,
      arbitrary: fc.tuple(operation, fc.nat(), fc.string({ maxLength: 3 })).map(([op, cut, junk]) => {
        const text = `${op.keyword} { ${op.calls.join(" ")} }`;
        const at = cut % Math.max(text.length, 1);
        return { document: cut % 2 ? text.slice(0, at) : text.slice(0, at) + junk + text.slice(at + 1), envelope: 0 };
      }),
    },
    // sizes and shapes: deep, wide, many aliases/directives/fragments, long names
    {
      weight: 2,
      arbitrary: fc
        .tuple(fc.constantFrom(0, 1, 2, 3, 4, 5, 6, 7), fc.integer({ min: 50, max: 60_000 }))
        .map(([shape, n]) => {
          const documents = [
            `{ ${"me { ".repeat(n)} urn ${"}".repeat(n)} }`,
            `{ ${"a{".repeat(n)}${"}".repeat(n)} }`,
            `{ me @include(if: true) ${"@include(if: true) ".repeat(Math.min(n, 50_000))} { urn } }`,
            `{ ${Array.from({ length: Math.min(n, 5000) }, (_, i) => `a${i}: __typename`).join(" ")} }`,
            `{ __schema { types { ${"fields { type { ofType { ".repeat(Math.min(n, 2000))}name${" } } }".repeat(Math.min(n, 2000))} } } }`,
            `query { ...F0 } ${Array.from({ length: Math.min(n, 3000) }, (_, i) => `fragment F${i} on Query { ...F${i + 1} }`).join(" ")} fragment F${Math.min(n, 3000)} on Query { __typename }`,
            `{ ${"x".repeat(n)} }`,
            `query(${Array.from({ length: Math.min(n, 3000) }, (_, i) => `$v${i}: String`).join(", ")}) { __typename }`,
          ];
          return { document: documents[shape]!, envelope: 0 };
        }),
    },
  );
  const envelope = fc.tuple(document, fc.nat({ max: 19 }), hostileJson).map(([doc, roll, junk]): unknown => {
    const base: Record<string, unknown> = { query: doc.document };
    if (doc.envelope === 1) base.operationName = roll % 2 ? "Op" : "Other";
    switch (roll) {
      case 0:
        return [base, base]; // batching
      case 1:
        return { ...base, query: junk };
      case 2:
        return { ...base, variables: junk };
      case 3:
        return { ...base, variables: { x: junk, input: junk, urn: junk } };
      case 4:
        return { ...base, operationName: junk };
      case 5:
        return { ...base, extensions: { persistedQuery: { version: 1, sha256Hash: "0".repeat(64) } } };
      case 6:
        return { ...base, extensions: junk };
      case 7:
        // own keys as JSON.parse makes them, not the object literal's prototype
        return JSON.parse(
          `{"query":${JSON.stringify(doc.document)},"__proto__":{"query":"{ me { urn } }"},"constructor":1}`,
        );
      case 8:
        return junk;
      default:
        return base;
    }
  });
  return fc
    .tuple(
      envelope,
      fc.constantFrom("/api/graphql", "/graphql", "/api/graphql/", "/API/GraphQL"),
      fc.oneof({ weight: 12, arbitrary: fc.constant("POST") }, { weight: 1, arbitrary: fc.constantFrom(...METHODS) }),
      fc.oneof(
        { weight: 8, arbitrary: fc.constant<BodyShape | null>(null) },
        { weight: 1, arbitrary: bodyArb(() => ({ query: "{ me { urn } }" })).map((s): BodyShape | null => s) },
      ),
      fc.oneof(
        { weight: 12, arbitrary: fc.constant<string | null>(null) },
        { weight: 1, arbitrary: fc.constantFrom<string | null>(...CONTENT_TYPES) },
      ),
      fc.constantFrom("", "", "", "", "?query={__typename}", "?x=%zz"),
    )
    .map(([payload, path, method, raw, contentType, query]) => {
      const headers: Record<string, string> = {};
      const shape = raw ?? {
        text: JSON.stringify(payload) ?? "null",
        contentType: contentType ?? "application/json",
        encoding: null,
      };
      return {
        kind: `graphql ${firstField(payload)}`,
        method,
        path: `${path}${query}`,
        headers,
        body: method === "GET" || method === "HEAD" ? undefined : encodeBody(shape, headers),
      };
    });
}

/** The first field of a GraphQL payload, for grouping failures. */
function firstField(payload: unknown): string {
  const query =
    payload && typeof payload === "object" && "query" in payload ? (payload as { query: unknown }).query : undefined;
  if (typeof query !== "string") return "(no query)";
  return (
    /^\s*(query|mutation)?[^{]*\{\s*(?:\w+\s*:\s*)?(\w+)/.exec(query)?.slice(1).filter(Boolean).join(" ") ??
    "(unparsed)"
  );
}

// ---------------------------------------------------------------------------------------------------------------
// Callers

interface Credentials {
  holder: string;
  nobody: string;
  revoked: string;
}

function authArb(credentials: Credentials): fc.Arbitrary<[string, Record<string, string>]> {
  const basic = (id: string, secret: string) => `Basic ${Buffer.from(`${id}:${secret}`).toString("base64")}`;
  const system = basic(DEVELOPMENT_SECRETS.SYSTEM_CLIENT_ID, DEVELOPMENT_SECRETS.SYSTEM_CLIENT_SECRET);
  const now = Math.floor(Date.now() / 1000);
  const claims = {
    sub: HOLDER,
    jti: "00000000-0000-0000-0000-000000000000",
    type: "PERSONAL",
    iat: now - 7200,
    exp: now - 3600,
    iss: "metadata-admin",
    ver: 2,
  };
  const expired = new Hs256(DEVELOPMENT_SECRETS.TOKEN_SIGNING_KEY).sign(claims as never);
  const forged = new Hs256("not-the-key").sign({ ...claims, sub: ROOT, exp: now + 3600 } as never);
  const choices: Array<[string, number, Record<string, string>]> = [
    ["holder", 20, { authorization: `Bearer ${credentials.holder}` }],
    ["root (system client)", 12, { authorization: system, "x-platform-actor": ROOT }],
    ["none", 1, {}],
    ["no privilege", 1, { authorization: `Bearer ${credentials.nobody}` }],
    ["revoked", 1, { authorization: `Bearer ${credentials.revoked}` }],
    ["expired", 1, { authorization: `Bearer ${expired}` }],
    ["forged", 1, { authorization: `Bearer ${forged}` }],
    ["holder acting as root", 1, { authorization: `Bearer ${credentials.holder}`, "x-platform-actor": ROOT }],
    ["holder, malformed actor", 1, { authorization: `Bearer ${credentials.holder}`, "x-platform-actor": "not a urn" }],
    ["system client, no actor", 1, { authorization: system }],
    ["system client, malformed actor", 1, { authorization: system, "x-platform-actor": "urn:li:corpuser:" }],
    [
      "system client, long actor",
      1,
      { authorization: system, "x-platform-actor": `urn:li:corpuser:${"x".repeat(4000)}` },
    ],
    [
      "wrong secret",
      1,
      { authorization: basic(DEVELOPMENT_SECRETS.SYSTEM_CLIENT_ID, "wrong"), "x-platform-actor": ROOT },
    ],
    ["malformed", 1, { authorization: "Bearer" }],
    ["malformed", 1, { authorization: "Bearer a.b.c" }],
    ["malformed", 1, { authorization: "Basic !!!" }],
    ["malformed", 1, { authorization: `Basic ${Buffer.from("no-colon").toString("base64")}` }],
    ["malformed", 1, { authorization: `bearer  ${credentials.holder} ` }],
    ["malformed", 1, { authorization: `Bearer ${"a".repeat(8000)}` }],
    ["malformed", 1, { authorization: "Digest x" }],
  ];
  return fc.oneof(
    ...choices.map(([name, weight, headers]) => ({
      weight,
      arbitrary: fc.constant<[string, Record<string, string>]>([name, headers]),
    })),
  );
}

/** A few headers a client may send oddly. */
const extraHeaders: fc.Arbitrary<Record<string, string>> = fc.oneof(
  { weight: 9, arbitrary: fc.constant({}) },
  {
    weight: 1,
    arbitrary: fc.constantFrom<Record<string, string>>(
      { "x-request-id": "x".repeat(5000) },
      { "x-request-id": "\u00ff\u00fe" },
      { accept: "text/html" },
      { accept: "application/xml;q=2" },
      { "accept-encoding": "gzip;q=nope" },
      { "apollo-require-preflight": "true" },
      { "x-forwarded-for": "1.1.1.1, nope, ::1" },
      { "x-http-method-override": "DELETE" },
      { expect: "100-continue" },
      { "transfer-encoding": "chunked" },
      { "content-length": "0" },
      { cookie: "a=".repeat(1000) },
      { range: "bytes=0-1" },
      { "if-none-match": "*" },
    ),
  },
);

// ---------------------------------------------------------------------------------------------------------------
// Sending

// A connection per request: a keep-alive socket the server closes after an error would fail the next request.
const agent = new http.Agent({ keepAlive: false });

function send(baseUrl: string, request: FuzzRequest, auth: Record<string, string>): Promise<Answer> {
  const url = new URL(baseUrl);
  return new Promise((resolve) => {
    let req: http.ClientRequest;
    try {
      req = http.request({
        host: url.hostname,
        port: url.port,
        method: request.method,
        path: request.path,
        agent,
        headers: {
          ...request.headers,
          ...auth,
          // chunked when asked for (both headers at once is a smuggling attempt node's parser refuses)
          ...(request.body && !request.headers["transfer-encoding"]
            ? { "content-length": String(request.body.length) }
            : {}),
        },
        timeout: 15_000,
      });
    } catch (error) {
      // A request node itself refuses to send (a character a header or path may not hold): nothing to ask.
      return resolve({ status: 0, text: `not sent: ${(error as Error).message}` });
    }
    req.on("response", (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (chunk: Buffer) => chunks.push(chunk));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString("utf8") }));
      res.on("error", (error) => resolve({ status: -1, text: `response broken: ${error.message}` }));
    });
    req.on("timeout", () => req.destroy(new Error("no answer within 15 s")));
    req.on("error", (error) => resolve({ status: -1, text: `request failed: ${error.message}` }));
    req.end(request.body);
  });
}

/** A failure: a 5xx, a GraphQL INTERNAL_SERVER_ERROR, or no answer at all. */
function failureOf(request: FuzzRequest, answer: Answer): string | undefined {
  if (answer.status === 0) return undefined; // not sent
  if (answer.status === -1) {
    // node's HTTP server refuses a method it does not know (400) and a body past the limit (413) before reading the
    // rest of the body, then closes: a client still writing it sees the connection reset, not the answer.
    const refusedEarly = !http.METHODS.includes(request.method) || (request.body?.length ?? 0) > 1024 * 1024;
    if (refusedEarly && /ECONNRESET|EPIPE/.test(answer.text)) return undefined;
    return `no answer (${answer.text.replace(/\d+/g, "N")})`;
  }
  if (answer.status >= 500) return `${answer.status} ${safeCode(answer.text)}`;
  if (request.kind.startsWith("graphql") && answer.text.includes('"INTERNAL_SERVER_ERROR"'))
    return `${answer.status} GraphQL INTERNAL_SERVER_ERROR`;
  return undefined;
}

function safeCode(text: string): string {
  try {
    const body = JSON.parse(text) as {
      code?: string;
      message?: string;
      errors?: Array<{ message?: string; extensions?: { code?: string } }>;
    };
    const message = body.message ?? body.errors?.[0]?.message ?? "";
    return `${body.code ?? body.errors?.[0]?.extensions?.code ?? ""} ${message.slice(0, 80).replace(/\d+/g, "N")}`;
  } catch {
    return text.slice(0, 80);
  }
}

function show(request: FuzzRequest, answer: Answer): string {
  const body = request.body?.toString("utf8") ?? "";
  return [
    `${request.method} ${request.path.slice(0, 300)}  [${request.auth}] ${JSON.stringify(request.headers).slice(0, 300)}`,
    `  body (${request.body?.length ?? 0} B): ${body.slice(0, 400)}`,
    `  → ${answer.status} ${answer.text.slice(0, 400)}`,
  ].join("\n");
}

async function residentBytes(baseUrl: string): Promise<number> {
  const metrics = await (await fetch(`${baseUrl}/metrics`)).text();
  return Number(/^process_resident_memory_bytes (\S+)$/m.exec(metrics)?.[1] ?? NaN);
}

// ---------------------------------------------------------------------------------------------------------------

describe("fuzz: malformed HTTP and GraphQL requests against the real gateway", () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  let gateway: RunningService;
  let worker: RunningService;
  let baseUrl: string;
  let schema: GraphQLSchema;
  let credentials: Credentials;

  const asRoot = async (query: string, variables: Record<string, unknown> = {}) => {
    const res = await fetch(`${baseUrl}/api/graphql`, {
      method: "POST",
      headers: systemClient(ROOT),
      body: JSON.stringify({ query, variables }),
    });
    const body = (await res.json()) as { data?: Record<string, unknown>; errors?: unknown };
    if (body.errors) throw new Error(JSON.stringify(body.errors));
    return body.data!;
  };
  const tokenFor = async (actorUrn: string) => {
    const data = await asRoot(
      `mutation($input: GetAccessTokenInput!) { createAccessToken(input: $input) { accessToken metadata { id } } }`,
      { input: { type: "PERSONAL", actorUrn, duration: "ONE_DAY", name: "fuzz" } },
    );
    return data.createAccessToken as { accessToken: string; metadata: { id: string } };
  };

  beforeAll(async () => {
    db = await createTestDatabase("fuzz");
    const port = await freePort();
    baseUrl = `http://127.0.0.1:${port}`;
    const env = {
      DATABASE_URL: db.url,
      REDIS_URL,
      QUEUE_PREFIX: uniqueName("fuzz"),
      PORT: String(port),
      LOG_LEVEL: "warn",
    };
    gateway = startService("gateway", env);
    worker = startService("evaluation-worker", { ...env, LOG_LEVEL: "info" });
    await Promise.all([waitUntilReady(baseUrl, gateway), waitForOutput(worker, "worker running")]);

    // A token holder with two privileges, one with none, and a revoked token.
    await asRoot(`mutation($input: PolicyUpdateInput!) { createPolicy(input: $input) }`, {
      input: {
        name: "fuzz holder",
        state: "ACTIVE",
        privileges: ["MANAGE_TESTS", "INGEST_METADATA"],
        actors: { users: [HOLDER] },
      },
    });
    const revoked = await tokenFor(HOLDER);
    await asRoot(`mutation($id: String!) { revokeAccessToken(tokenId: $id) }`, { id: revoked.metadata.id });
    credentials = {
      holder: (await tokenFor(HOLDER)).accessToken,
      nobody: (await tokenFor(NOBODY)).accessToken,
      revoked: revoked.accessToken,
    };
    // Something to read and evaluate, so the deeper paths run.
    await asRoot(`mutation($input: CreateTestInput!) { createTest(input: $input) }`, {
      input: {
        id: "fuzz",
        name: "fuzz",
        category: "fuzz",
        definition: {
          json: JSON.stringify({
            on: { types: ["dataset"] },
            rules: [{ property: "datasetProperties.description", operator: "exists" }],
          }),
        },
      },
    });
    const ingest = await fetch(`${baseUrl}/gms/aspects?action=ingestProposalBatch`, {
      method: "POST",
      headers: systemClient(ROOT),
      body: JSON.stringify(ACTIONS["/aspects"]!.ingestProposalBatch!()),
    });
    expect(ingest.status).toBe(200);

    const introspection = await asRoot(getIntrospectionQuery());
    schema = buildClientSchema(introspection as unknown as IntrospectionQuery);
  }, 60_000);

  afterAll(async () => {
    agent.destroy();
    await Promise.all([gateway?.stop(), worker?.stop()]);
    await db?.drop();
  });

  it(`answers every request below 500 and stays healthy (seed ${SEED}, ${RUNS} runs)`, async () => {
    process.stdout.write(`fuzz: FUZZ_SEED=${SEED} FUZZ_RUNS=${RUNS}\n`);
    const request = fc
      .tuple(
        fc.oneof(
          { weight: 5, arbitrary: graphqlArb(schema) },
          { weight: 5, arbitrary: actionRequest },
          { weight: 2, arbitrary: getRequest },
          { weight: 1, arbitrary: otherRequest },
        ),
        authArb(credentials),
        extraHeaders,
      )
      .map(([base, [auth, authHeaders], extra]) => ({
        request: { ...base, auth, headers: { ...extra, ...base.headers } },
        authHeaders,
      }));
    const failures = new Map<string, { count: number; example: string; index: number }>();
    const statuses = new Map<number, number>();
    const rss: number[] = [await residentBytes(baseUrl)];
    const started = Date.now();
    let index = 0;
    // Never fails inside: every failure is collected, so one run lists them all (fast-check generates lazily).
    await fc.assert(
      fc.asyncProperty(request, async ({ request: fuzzRequest, authHeaders }) => {
        const answer = await send(baseUrl, fuzzRequest, authHeaders);
        statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1);
        const failure = failureOf(fuzzRequest, answer);
        if (failure) {
          const key = `${fuzzRequest.kind} → ${failure}`;
          const seen = failures.get(key);
          if (seen) seen.count++;
          else failures.set(key, { count: 1, example: show(fuzzRequest, answer), index });
        }
        if (index % 500 === 499) rss.push(await residentBytes(baseUrl));
        index++;
        return true;
      }),
      { seed: SEED, numRuns: RUNS },
    );
    rss.push(await residentBytes(baseUrl));
    const elapsed = Date.now() - started;

    process.stdout.write(
      [
        `fuzz: ${index} requests in ${(elapsed / 1000).toFixed(1)} s; statuses ${JSON.stringify(Object.fromEntries(statuses))}`,
        `fuzz: gateway RSS MB ${rss.map((b) => Math.round(b / 2 ** 20)).join(" → ")}`,
        ...[...failures].map(([key, f]) => `FAILURE ×${f.count} (first at #${f.index}): ${key}\n${f.example}`),
        "",
      ].join("\n"),
    );
    // Still there and healthy: the process lives, answers /health and /ready, and stayed within its memory budget.
    expect(gateway.process.exitCode).toBeNull();
    expect(worker.process.exitCode).toBeNull();
    expect((await fetch(`${baseUrl}/health`)).status).toBe(200);
    expect((await fetch(`${baseUrl}/ready`)).status).toBe(200);
    expect(Math.max(...rss)).toBeLessThan(RSS_SANITY_BYTES);
    expect([...failures.keys()]).toEqual([]);
  }, 120_000);
});
