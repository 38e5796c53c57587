/** The fuzz test's callers (fuzz.int.spec.ts): credentials good, bad, expired, forged, and odd headers. */
import fc from "fast-check";
import { DEVELOPMENT_SECRETS } from "@mdp/core";
import { Hs256 } from "../../../src/tokens/jwt";
import { ROOT, HOLDER } from "./fuzz-request";

export interface Credentials {
  holder: string;
  nobody: string;
  revoked: string;
}

export function authArb(credentials: Credentials): fc.Arbitrary<[string, Record<string, string>]> {
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
export const extraHeaders: fc.Arbitrary<Record<string, string>> = fc.oneof(
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
