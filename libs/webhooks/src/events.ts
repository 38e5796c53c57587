/**
 * What a webhook is made of: the event as the outbox holds it, the body sent for it, and which subscriptions it
 * matches.
 */

/** An event as a webhook's body is made of (the outbox's row). */
export interface WebhookEvent {
  id: string;
  seq: string;
  eventType: string;
  entityUrn: string;
  entityType: string;
  category: string | null;
  subjectActor: string | null;
  /** the payload as stored (JSON text) */
  payload: string;
  createdAt: number;
}

/**
 * The body POSTed for an event: `{id, seq, eventType, createdAt, event}` with `event` the payload as
 * listPlatformEvents gives it. An event whose body would pass `maxBytes` is sent without it: `event` null,
 * `truncated: true`, with the fields that say what it is (the receiver reads it whole through listPlatformEvents).
 */
export function webhookBody(event: WebhookEvent, maxBytes: number): string {
  const head = { id: event.id, seq: event.seq, eventType: event.eventType, createdAt: Math.round(event.createdAt) };
  const whole = `{"id":${JSON.stringify(head.id)},"seq":${JSON.stringify(head.seq)},"eventType":${JSON.stringify(
    head.eventType,
  )},"createdAt":${head.createdAt},"event":${event.payload}}`;
  if (Buffer.byteLength(whole) <= maxBytes) return whole;
  return JSON.stringify({
    ...head,
    event: null,
    truncated: true,
    entityUrn: event.entityUrn.slice(0, 2048),
    entityType: event.entityType,
    category: event.category,
  });
}

/** What a subscription selects. */
export interface WebhookFilter {
  eventTypes: readonly string[];
  categories: readonly string[];
  entityUrn: string | null;
  actorUrn: string | null;
  testUrn: string | null;
}

/**
 * Whether `event` is one the subscription asked for: its type, its category (when the subscription names any: an
 * event without one, a MetadataChangeLog_v1, is not of any), the entity, the actor (the user it is about, or who made
 * the change), the test (the entity, or an EntityChangeEvent_v1's modifier: a test result's test).
 */
export function webhookMatches(filter: WebhookFilter, event: WebhookEvent, parsed: Record<string, unknown>): boolean {
  if (!filter.eventTypes.includes(event.eventType)) return false;
  if (filter.categories.length > 0 && (event.category === null || !filter.categories.includes(event.category))) {
    return false;
  }
  if (filter.entityUrn !== null && event.entityUrn !== filter.entityUrn) return false;
  if (filter.actorUrn !== null) {
    const stamp = (parsed.created ?? parsed.auditStamp) as { actor?: unknown } | undefined;
    if (event.subjectActor !== filter.actorUrn && stamp?.actor !== filter.actorUrn) return false;
  }
  if (filter.testUrn !== null && event.entityUrn !== filter.testUrn && parsed.modifier !== filter.testUrn) {
    return false;
  }
  return true;
}
