import { webhookBody, webhookMatches, type WebhookEvent } from "./events";

const event = (over: Partial<WebhookEvent> = {}): WebhookEvent => ({
  id: "42",
  seq: "7",
  eventType: "MetadataChangeLog_v1",
  entityUrn: "urn:li:dataset:(urn:li:dataPlatform:hive,db.t,PROD)",
  entityType: "dataset",
  category: null,
  subjectActor: null,
  payload: JSON.stringify({
    entityUrn: "urn:li:dataset:(urn:li:dataPlatform:hive,db.t,PROD)",
    created: { actor: "urn:li:corpuser:a" },
  }),
  createdAt: 1_700_000_000_000,
  ...over,
});

describe("webhook bodies", () => {
  it("carry the event whole, or a reference when it passes the limit", () => {
    const whole = JSON.parse(webhookBody(event(), 65_536)) as Record<string, unknown>;
    expect(whole).toMatchObject({ id: "42", seq: "7", eventType: "MetadataChangeLog_v1", event: { created: {} } });
    const big = event({ payload: JSON.stringify({ blob: "x".repeat(5_000) }) });
    const cut = webhookBody(big, 1_024);
    expect(Buffer.byteLength(cut)).toBeLessThanOrEqual(1_024 + 2_100);
    expect(JSON.parse(cut)).toMatchObject({ id: "42", event: null, truncated: true, entityType: "dataset" });
  });
});

describe("webhook filters", () => {
  const filter = {
    eventTypes: ["MetadataChangeLog_v1"],
    categories: [],
    entityUrn: null,
    actorUrn: null,
    testUrn: null,
  };
  const parsed = (e: WebhookEvent) => JSON.parse(e.payload) as Record<string, unknown>;
  it("match by type, category, entity, actor and test", () => {
    const e = event();
    expect(webhookMatches(filter, e, parsed(e))).toBe(true);
    expect(webhookMatches({ ...filter, eventTypes: ["EntityChangeEvent_v1"] }, e, parsed(e))).toBe(false);
    expect(webhookMatches({ ...filter, categories: ["TASK"] }, e, parsed(e))).toBe(false);
    expect(webhookMatches({ ...filter, entityUrn: "urn:li:dataset:other" }, e, parsed(e))).toBe(false);
    expect(webhookMatches({ ...filter, actorUrn: "urn:li:corpuser:a" }, e, parsed(e))).toBe(true);
    expect(webhookMatches({ ...filter, actorUrn: "urn:li:corpuser:b" }, e, parsed(e))).toBe(false);
    const result = event({
      eventType: "EntityChangeEvent_v1",
      category: "TEST_RESULT",
      payload: JSON.stringify({ modifier: "urn:li:test:t" }),
    });
    const ece = { ...filter, eventTypes: ["EntityChangeEvent_v1"] };
    expect(
      webhookMatches({ ...ece, categories: ["TEST_RESULT"], testUrn: "urn:li:test:t" }, result, parsed(result)),
    ).toBe(true);
    expect(webhookMatches({ ...ece, testUrn: "urn:li:test:u" }, result, parsed(result))).toBe(false);
  });
});
