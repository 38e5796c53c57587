import { AppError, SYSTEM_ACTOR_URN, unauthenticated } from "@mdp/core";
import { Authenticator } from "./authenticator";

const config = { AUTH_ENABLED: true, SYSTEM_CLIENT_ID: "system", SYSTEM_CLIENT_SECRET: "a-long-system-secret" };
const ALICE = "urn:li:corpuser:alice";
const basic = (id: string, secret: string) => `Basic ${Buffer.from(`${id}:${secret}`).toString("base64")}`;
const verifyToken = async (token: string) => {
  if (token === "good-token") return { urn: ALICE, via: "token" as const, tokenId: "t1" };
  throw unauthenticated("Unable to verify the provided token.");
};

async function failure(promise: Promise<unknown>): Promise<{ code: string; message: string }> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof AppError) return { code: error.code, message: error.message };
    throw error;
  }
  throw new Error("expected a failure");
}

describe("Authenticator", () => {
  const auth = new Authenticator(config, verifyToken);

  it("refuses a request without credentials", async () => {
    expect(await failure(auth.authenticate({}))).toEqual({
      code: "UNAUTHENTICATED",
      message: "Request is missing 'Authorization' header.",
    });
  });

  it("does not trust the actor header alone when authentication is enabled", async () => {
    expect((await failure(auth.authenticate({ "x-platform-actor": ALICE }))).code).toBe("UNAUTHENTICATED");
  });

  it("refuses an unknown scheme", async () => {
    expect(await failure(auth.authenticate({ authorization: "Token abc" }))).toEqual({
      code: "UNAUTHENTICATED",
      message: "Authorization header must use the Bearer or Basic scheme.",
    });
  });

  it.each(["Bearer", "Bearer   ", "bearer", "Basic"])(
    "says the credentials are missing from '%s', as a shell variable left unset sends it",
    async (authorization) => {
      const scheme = authorization.trim().toLowerCase() === "basic" ? "Basic" : "Bearer";
      expect(await failure(auth.authenticate({ authorization }))).toEqual({
        code: "UNAUTHENTICATED",
        message: `The Authorization header names the ${scheme} scheme but holds no credentials after it.`,
      });
    },
  );

  it("accepts a bearer token and takes the actor from it", async () => {
    await expect(auth.authenticate({ authorization: "Bearer good-token" })).resolves.toEqual({
      urn: ALICE,
      via: "token",
      tokenId: "t1",
    });
  });

  it("passes the verifier's reason through for a bad token", async () => {
    expect((await failure(auth.authenticate({ authorization: "Bearer nope" }))).message).toBe(
      "Unable to verify the provided token.",
    );
  });

  it("refuses an actor header that contradicts the token with FORBIDDEN", async () => {
    const headers = { authorization: "Bearer good-token", "x-platform-actor": "urn:li:corpuser:mallory" };
    expect((await failure(auth.authenticate(headers))).code).toBe("FORBIDDEN");
  });

  it.each(["alice", "urn:li:corpGroup:alice", "urn:li:corpuser:"])(
    "refuses a malformed actor header '%s' beside a bearer token as bad input naming the header",
    async (header) => {
      const headers = { authorization: "Bearer good-token", "x-platform-actor": header };
      const { code, message } = await failure(auth.authenticate(headers));
      expect(code).toBe("BAD_USER_INPUT");
      expect(message).toContain("x-platform-actor");
    },
  );

  it("accepts an actor header that agrees with the token", async () => {
    const headers = { authorization: "Bearer good-token", "x-platform-actor": ALICE };
    await expect(auth.authenticate(headers)).resolves.toMatchObject({ urn: ALICE });
  });

  it("lets the system client act for the user named in the header", async () => {
    const headers = { authorization: basic("system", "a-long-system-secret"), "x-platform-actor": ALICE };
    await expect(auth.authenticate(headers)).resolves.toEqual({ urn: ALICE, via: "system" });
  });

  it.each([
    ["wrong secret", basic("system", "wrong")],
    ["wrong client id", basic("other", "a-long-system-secret")],
    ["no colon", `Basic ${Buffer.from("system").toString("base64")}`],
  ])("refuses the system client with a %s", async (_case, authorization) => {
    expect(await failure(auth.authenticate({ authorization, "x-platform-actor": ALICE }))).toEqual({
      code: "UNAUTHENTICATED",
      message: "Invalid system client credentials.",
    });
  });

  it("lets the system client naming nobody act as the system actor, as DataHub's does", async () => {
    await expect(auth.authenticate({ authorization: basic("system", "a-long-system-secret") })).resolves.toEqual({
      urn: SYSTEM_ACTOR_URN,
      via: "system",
    });
    // DataHub's raw form, as its SDK and datahub-gc send it
    await expect(auth.authenticate({ authorization: "Basic system:a-long-system-secret" })).resolves.toEqual({
      urn: SYSTEM_ACTOR_URN,
      via: "system",
    });
  });

  it("still refuses wrong system client credentials that name nobody", async () => {
    expect(await failure(auth.authenticate({ authorization: basic("system", "wrong") }))).toEqual({
      code: "UNAUTHENTICATED",
      message: "Invalid system client credentials.",
    });
  });

  it("refuses a malformed actor urn as bad input naming the header", async () => {
    const headers = { authorization: basic("system", "a-long-system-secret"), "x-platform-actor": "alice" };
    expect(await failure(auth.authenticate(headers))).toMatchObject({ code: "BAD_USER_INPUT" });
  });

  describe("with AUTH_ENABLED=false (development)", () => {
    const dev = new Authenticator({ ...config, AUTH_ENABLED: false }, verifyToken);

    it("trusts the actor header alone", async () => {
      await expect(dev.authenticate({ "x-platform-actor": ALICE })).resolves.toEqual({ urn: ALICE, via: "header" });
    });

    it("still refuses a request that names nobody", async () => {
      expect((await failure(dev.authenticate({}))).code).toBe("UNAUTHENTICATED");
    });
  });
});
