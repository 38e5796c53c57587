/** The fuzz test's GraphQL requests (fuzz.int.spec.ts): operations generated from the introspected schema. */
import fc from "fast-check";
import {
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
} from "graphql";
import { DATASET, HOLDER, ROOT, type FuzzRequest } from "./fuzz-request";
import { hostileJson, hostileKey, hostileNumber, hostileString } from "./hostile-values";
import { bodyArb, CONTENT_TYPES, encodeBody, METHODS, type BodyShape } from "./http-requests";

/** A GraphQL literal for `type`, right-typed or not; `$` variables are collected in `vars`. */
export function graphqlValueArb(schema: GraphQLSchema, type: GraphQLInputType, depth: number): fc.Arbitrary<string> {
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
export const testDefinitionText: fc.Arbitrary<string> = fc.oneof(
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

export function selectionArb(type: GraphQLOutputType, depth: number): fc.Arbitrary<string> {
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

export function fieldCallArb(schema: GraphQLSchema, field: GraphQLField<unknown, unknown>): fc.Arbitrary<string> {
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

export interface GraphQLShape {
  document: string;
  variables?: unknown;
  operationName?: unknown;
  envelope: number;
}

export function graphqlArb(schema: GraphQLSchema): fc.Arbitrary<Omit<FuzzRequest, "auth">> {
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
export function firstField(payload: unknown): string {
  const query =
    payload && typeof payload === "object" && "query" in payload ? (payload as { query: unknown }).query : undefined;
  if (typeof query !== "string") return "(no query)";
  return (
    /^\s*(query|mutation)?[^{]*\{\s*(?:\w+\s*:\s*)?(\w+)/.exec(query)?.slice(1).filter(Boolean).join(" ") ??
    "(unparsed)"
  );
}
