import { z } from "zod";
import {
  canReadPlatformEvent,
  ENTITY_CHANGE_CATEGORIES,
  ENTITY_CHANGE_EVENT,
  METADATA_CHANGE_LOG,
  PLATFORM_EVENT_TYPES,
  type PlatformEventAudience,
  type PlatformEventReader,
} from "@mdp/core";
import { RESULT_LIMITS } from "@mdp/metadata-tests";
import { type Database, PLATFORM_EVENT_LISTING, type ReaderScope, replicaReads } from "@mdp/db";
import type { Actor } from "../auth/actor";
import { said, urnField, wholeNumberField } from "../shared/validate";
import type { PolicyEngine } from "../policies/policy-engine";

/** listPlatformEvents' bounds (docs/limits.md "Platform events"). */
export const PLATFORM_EVENT_LIST_LIMITS = {
  defaultCount: 100,
  maxCount: 1000,
  /** rows of the stream one call reads, readable or not: a caller who may read little still moves on, in bounded work */
  maxScan: PLATFORM_EVENT_LISTING.maxScan,
  /** the events' payloads of one answer, JSON bytes (the service's answer limit) */
  answerBytes: RESULT_LIMITS.answerBytes,
  /** names one filter list holds */
  filterItems: 16,
} as const;

const CATEGORY_NAMES = Object.keys(ENTITY_CHANGE_CATEGORIES);

const nameList = (allowed: readonly string[], what: string) =>
  z
    .array(
      z.string().refine(
        (value) => allowed.includes(value),
        said((at) => `${at} must be one of ${allowed.join(", ")}`),
      ),
    )
    .max(
      PLATFORM_EVENT_LIST_LIMITS.filterItems,
      said((at) => `${at} lists at most ${PLATFORM_EVENT_LIST_LIMITS.filterItems} ${what}`),
    )
    .nullish();

/** listPlatformEvents' arguments (declared at its resolver, platform-events.graphql.ts). */
export const listPlatformEventsArgs = z.object({
  // A position of the stream (a seq, as `next` and `oldest` answer it): digits, at most a bigint's.
  since: z
    .string()
    .regex(
      /^\d{1,18}$/,
      said((at) => `${at} must be a position as next answered it (digits, at most 18)`),
    )
    .nullish(),
  count: wholeNumberField(1, PLATFORM_EVENT_LIST_LIMITS.maxCount, PLATFORM_EVENT_LIST_LIMITS.defaultCount),
  eventTypes: nameList(PLATFORM_EVENT_TYPES, "event types"),
  categories: nameList(CATEGORY_NAMES, "categories"),
  entityUrn: urnField().nullish(),
});

export interface PlatformEventView {
  seq: string;
  eventType: string;
  category: string | null;
  operation: string | null;
  entityType: string;
  entityUrn: string;
  createdAt: number;
  /** the event's record, JSON text */
  payload: string;
}

export interface PlatformEventPage {
  events: PlatformEventView[];
  /** pass as `since` next time: past every event read, whether this caller could read it or not */
  next: string;
  /** the oldest position still kept (null: none) */
  oldest: string | null;
}

/**
 * listPlatformEvents (docs/events.md): the platform-event stream read with a cursor. Every event answered is one the
 * caller may read now (@mdp/core canReadPlatformEvent with its current effective privileges: its token's chain and
 * scopes, as every check); what it cannot read at all is left out in SQL, and each call reads a bounded window of
 * the stream, so a caller who may read little pays no more than one who may read everything.
 */
export class PlatformEventsService {
  constructor(
    private readonly db: Database,
    private readonly engine: PolicyEngine,
  ) {}

  async list(actor: Actor, input: z.output<typeof listPlatformEventsArgs>): Promise<PlatformEventPage> {
    const reader: PlatformEventReader = { urn: actor.urn, privileges: await this.engine.privilegesOf(actor) };
    const since = input.since ?? "0";
    const { events, scannedTo, oldest } = await replicaReads.listPlatformEventRows(this.db.stale, {
      since,
      count: input.count,
      scan: PLATFORM_EVENT_LIST_LIMITS.maxScan,
      scope: scopeOf(reader),
      filter: {
        ...(input.eventTypes && { eventTypes: input.eventTypes }),
        ...(input.categories && { categories: input.categories }),
        ...(input.entityUrn && { entityUrn: input.entityUrn }),
      },
    });
    const answered: PlatformEventView[] = [];
    let bytes = 0;
    let last: string | null = null;
    for (const event of events) {
      bytes += event.payloadBytes;
      if (answered.length > 0 && bytes > PLATFORM_EVENT_LIST_LIMITS.answerBytes) break;
      last = event.seq;
      if (!canReadPlatformEvent(event, reader)) continue; // the SQL's scope is a prefilter; this is the check
      answered.push({
        seq: event.seq,
        eventType: event.eventType,
        category: event.category,
        operation: event.operation,
        entityType: event.entityType,
        entityUrn: event.entityUrn,
        createdAt: Math.round(event.createdAt),
        payload: JSON.stringify(event.payload),
      });
    }
    // A full page (by count or bytes) resumes after its last event; otherwise after the whole window read.
    const full = last !== null && (events.length === input.count || last !== events.at(-1)?.seq);
    return { events: answered, next: full ? last! : (scannedTo ?? since), oldest };
  }
}

/** What the reader may read by privilege alone, per kind of event: canReadPlatformEvent asked of a subjectless one. */
export function scopeOf(reader: PlatformEventReader): ReaderScope {
  const may = (event: Omit<PlatformEventAudience, "subjectActor">) =>
    canReadPlatformEvent({ ...event, subjectActor: null }, reader);
  return {
    urn: reader.urn,
    mclTests: may({ eventType: METADATA_CHANGE_LOG, entityType: "test", category: null }),
    mclEntities: may({ eventType: METADATA_CHANGE_LOG, entityType: "dataset", category: null }),
    categories: CATEGORY_NAMES.filter(
      (category) =>
        category !== "SCHEDULE" && may({ eventType: ENTITY_CHANGE_EVENT, entityType: "dataHubTask", category }),
    ),
    scheduleTests: may({ eventType: ENTITY_CHANGE_EVENT, entityType: "test", category: "SCHEDULE" }),
    scheduleOther: may({ eventType: ENTITY_CHANGE_EVENT, entityType: "dataHubRetentionPolicy", category: "SCHEDULE" }),
    // A prefilter (SCHEDULE's entity types told apart by the check): the reader's own events of these categories.
    subjectCategories: CATEGORY_NAMES.filter((category) =>
      (category === "SCHEDULE" ? ["test", "dataHubRetentionPolicy"] : ["dataHubTask"]).some((entityType) =>
        canReadPlatformEvent(
          { eventType: ENTITY_CHANGE_EVENT, entityType, category, subjectActor: reader.urn },
          { urn: reader.urn, privileges: reader.privileges },
        ),
      ),
    ),
  };
}
