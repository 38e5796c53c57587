import { createHmac } from "node:crypto";
import { Hs256, type AccessTokenClaims } from "./jwt";

const claims: AccessTokenClaims = {
  sub: "urn:li:corpuser:alice",
  jti: "6f1c1f4e-8d7a-4a53-9a57-0d6f3f2d2a11",
  type: "PERSONAL",
  exp: 2_000_000_000,
  iat: 1_700_000_000,
  iss: "metadata-admin",
  ver: 2,
};

describe("Hs256", () => {
  const jwt = new Hs256("k".repeat(40));

  it("verifies what it signed and returns the claims", () => {
    expect(jwt.verify(jwt.sign(claims))).toEqual(claims);
  });

  it("produces a standard HS256 JWT that other libraries can check", () => {
    const [header, payload, signature] = jwt.sign(claims).split(".");
    expect(JSON.parse(Buffer.from(header!, "base64url").toString())).toEqual({ alg: "HS256", typ: "JWT" });
    const expected = createHmac("sha256", "k".repeat(40)).update(`${header}.${payload}`).digest("base64url");
    expect(signature).toBe(expected);
  });

  it("refuses a token signed with another key", () => {
    expect(() => jwt.verify(new Hs256("x".repeat(40)).sign(claims))).toThrow("bad signature");
  });

  it("refuses a token whose claims were altered", () => {
    const [header, , signature] = jwt.sign(claims).split(".");
    const forged = Buffer.from(JSON.stringify({ ...claims, sub: "urn:li:corpuser:admin" })).toString("base64url");
    expect(() => jwt.verify(`${header}.${forged}.${signature}`)).toThrow("bad signature");
  });

  it("refuses alg none and any header it did not issue", () => {
    const none = Buffer.from(JSON.stringify({ alg: "none", typ: "JWT" })).toString("base64url");
    const payload = Buffer.from(JSON.stringify(claims)).toString("base64url");
    expect(() => jwt.verify(`${none}.${payload}.`)).toThrow("malformed token");
  });

  it.each(["", "abc", "a.b", "a.b.c.d"])("refuses the malformed token %p", (token) => {
    expect(() => jwt.verify(token)).toThrow();
  });
});
