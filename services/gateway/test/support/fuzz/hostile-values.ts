/** The fuzz test's hostile values (fuzz.int.spec.ts): strings, numbers, JSON keys and values a parser trips on. */
import fc from "fast-check";

export const HOSTILE_STRINGS = [
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

export const hostileString: fc.Arbitrary<string> = fc.oneof(
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

export const hostileNumber: fc.Arbitrary<number> = fc.oneof(
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
export const hostileKey = fc.oneof(
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
export const { json: hostileJson } = fc.letrec<{ json: unknown }>((tie) => ({
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
export const deepJsonText = fc
  .tuple(fc.integer({ min: 100, max: 200_000 }), fc.constantFrom("[", '{"a":', '{"not":', '{"and":['))
  .map(([depth, open]) => {
    const close = open === "[" ? "]" : open === '{"and":[' ? "]}" : "}";
    return open.repeat(depth) + "1" + close.repeat(depth);
  });
