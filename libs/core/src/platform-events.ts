/**
 * The platform events this service publishes (the events page of docs/): what each kind is, and who may read it. One table for
 * every reader of the stream — `listPlatformEvents` answers and webhook deliveries — so an event never tells anyone
 * more than they could read through the API, checked against the reader's current privileges when it is read.
 *
 * Two event types, DataHub's names and shapes:
 * - `MetadataChangeLog_v1`: an aspect version written (DataHub Actions' MCL, without the aspect's value);
 * - `EntityChangeEvent_v1`: DataHub's semantic change record ({entityType, entityUrn, category, operation, modifier,
 *   parameters, auditStamp, version}), here for what the service itself does to its own objects, with the categories
 *   of ENTITY_CHANGE_CATEGORIES (DataHub has none for tokens, tasks, test results or schedules).
 */
import type { Privilege } from "./privileges";

export const METADATA_CHANGE_LOG = "MetadataChangeLog_v1";
export const ENTITY_CHANGE_EVENT = "EntityChangeEvent_v1";
export const PLATFORM_EVENT_TYPES = [METADATA_CHANGE_LOG, ENTITY_CHANGE_EVENT] as const;
export type PlatformEventType = (typeof PLATFORM_EVENT_TYPES)[number];

/**
 * The categories of `EntityChangeEvent_v1` and their operations. A subscription or a listing may name a category;
 * `parameters` of each is documented in the events page of docs/.
 */
export const ENTITY_CHANGE_CATEGORIES = {
  /** an access token (entityType dataHubAccessToken): created, rotated, revoked, or expiring within 7 days / 1 day */
  ACCESS_TOKEN: ["CREATE", "ROTATE", "REVOKE", "EXPIRING_SOON"],
  /** a truncation or retention task (entityType dataHubTask) that ended */
  TASK: ["COMPLETE", "FAIL", "CANCEL"],
  /** an entity's result of one test (the modifier) changing between pass and fail */
  TEST_RESULT: ["PASS", "FAIL"],
  /** scheduled work (a test's schedule or on-change evaluation, a retention policy) suspended */
  SCHEDULE: ["SUSPEND"],
} as const satisfies Record<string, readonly string[]>;
export type EntityChangeCategory = keyof typeof ENTITY_CHANGE_CATEGORIES;

/** What a reader's check needs of one event: its kind, what it is about, and whose it is. */
export interface PlatformEventAudience {
  eventType: string;
  entityType: string;
  /** EntityChangeEvent_v1's category; null for a MetadataChangeLog_v1 */
  category: string | null;
  /**
   * The user the event is about, who may read it without the category's privilege: a token's actor, a task's
   * creator, a suspended schedule's owner. Null: readable only through the privilege.
   */
  subjectActor: string | null;
}

export interface PlatformEventReader {
  urn: string;
  /** the reader's current effective privileges (implied ones included) */
  privileges: ReadonlySet<Privilege>;
}

/**
 * The privileges that let a reader read an event not about itself: any one of a set suffices, and every set of the
 * list must be met. A test's definition needs VIEW_TESTS; an entity's aspects GET_ENTITY; a test result both (the
 * outcome of a test over an entity tells something of the entity).
 */
function readPrivileges(event: PlatformEventAudience): Privilege[][] | undefined {
  if (event.eventType === METADATA_CHANGE_LOG) {
    return event.entityType === "test" ? [["VIEW_TESTS"]] : [["GET_ENTITY"]];
  }
  if (event.eventType !== ENTITY_CHANGE_EVENT) return undefined;
  switch (event.category as EntityChangeCategory) {
    case "ACCESS_TOKEN":
      return [["MANAGE_ACCESS_TOKENS"]];
    case "TASK":
      return [["GET_TASK_STATUS"]];
    case "TEST_RESULT":
      return [["VIEW_TESTS"], ["GET_ENTITY"]];
    case "SCHEDULE":
      return [event.entityType === "test" ? ["MANAGE_TESTS"] : ["MANAGE_SYSTEM_OPERATIONS"]];
    default:
      return undefined;
  }
}

/**
 * What an event's subject needs to read it: what the API asks of it to read that object of its own (its tokens:
 * listAccessTokens; its tasks: getTaskStatus; its tests: getTest; its retention policies: their reads), so an event
 * never tells its subject what the API would not (a token scoped elsewhere, a user who lost the privilege).
 */
function subjectPrivilege(event: PlatformEventAudience): Privilege | undefined {
  switch (event.category as EntityChangeCategory) {
    case "ACCESS_TOKEN":
      return "GENERATE_PERSONAL_ACCESS_TOKENS";
    case "TASK":
      return "GET_TASK_STATUS";
    case "SCHEDULE":
      return event.entityType === "test" ? "VIEW_TESTS" : "MANAGE_SYSTEM_OPERATIONS";
    case "TEST_RESULT": // about no user
    default:
      return undefined;
  }
}

/**
 * Whether `reader` may read `event` now: it is the event's subject and holds what reading that object of its own
 * needs, or it holds the category's privileges. An event of a kind this table does not know is read by nobody (a new
 * kind must say who reads it before anyone does).
 */
export function canReadPlatformEvent(event: PlatformEventAudience, reader: PlatformEventReader): boolean {
  const required = readPrivileges(event);
  if (!required) return false;
  if (event.subjectActor !== null && event.subjectActor === reader.urn) {
    const own = subjectPrivilege(event);
    if (own !== undefined && reader.privileges.has(own)) return true;
  }
  return required.every((anyOf) => anyOf.some((privilege) => reader.privileges.has(privilege)));
}
