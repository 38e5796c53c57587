import {
  newWebhookSecret,
  sealWebhookSecret,
  signStandardWebhook,
  signWebhookBody,
  unsealWebhookSecret,
  verifyWebhookSignature,
} from "./signing";

describe("webhook signing secrets", () => {
  it("are sealed at rest, opened only with the same server secret", () => {
    const secret = newWebhookSecret();
    const sealed = sealWebhookSecret(secret, "server-secret-one");
    expect(sealed).not.toContain(secret.slice(6));
    expect(sealWebhookSecret(secret, "server-secret-one")).not.toBe(sealed); // a fresh iv each time
    expect(unsealWebhookSecret(sealed, "server-secret-one")).toBe(secret);
    expect(() => unsealWebhookSecret(sealed, "server-secret-two")).toThrow();
  });
});

describe("webhook signatures", () => {
  it("verify over the timestamp and the exact body, within the tolerance", () => {
    const body = JSON.stringify({ id: "42", seq: "7", eventType: "MetadataChangeLog_v1", event: { a: 1 } });
    const header = signWebhookBody("whsec_x", 1_000, body);
    expect(header).toMatch(/^t=1000,v1=[0-9a-f]{64}$/);
    expect(verifyWebhookSignature("whsec_x", header, body, 300, 1_100)).toBe(true);
    expect(verifyWebhookSignature("whsec_x", header, `${body} `, 300, 1_100)).toBe(false);
    expect(verifyWebhookSignature("whsec_y", header, body, 300, 1_100)).toBe(false);
    expect(verifyWebhookSignature("whsec_x", header, body, 300, 2_000)).toBe(false); // too old: a replayed capture
    expect(verifyWebhookSignature("whsec_x", header.replace("t=1000", "t=1001"), body, 300, 1_100)).toBe(false);
    expect(verifyWebhookSignature("whsec_x", "garbage", body)).toBe(false);
  });
});

describe("Standard Webhooks signatures", () => {
  it("sign `id.timestamp.body` with the secret's bytes (the specification's example), one v1 per secret", () => {
    const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    const signed = signStandardWebhook([secret], "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, '{"test": 2432232314}');
    expect(signed).toBe("v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
    const other = newWebhookSecret();
    expect(other).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(signStandardWebhook([secret, other], "m", 1, "{}").split(" ")).toHaveLength(2);
    // The legacy header carries one v1= per secret too.
    expect(signWebhookBody([secret, other], 1, "{}")).toMatch(/^t=1,v1=[0-9a-f]{64},v1=[0-9a-f]{64}$/);
  });
});
