import { canReadPlatformEvent, type PlatformEventAudience } from "./platform-events";
import { withImplied } from "./privileges";

const reader = (urn: string, ...granted: string[]) => ({ urn, privileges: withImplied(granted) });
const tokenRevoked: PlatformEventAudience = {
  eventType: "EntityChangeEvent_v1",
  entityType: "dataHubAccessToken",
  category: "ACCESS_TOKEN",
  subjectActor: "urn:li:corpuser:alice",
};

describe("canReadPlatformEvent", () => {
  it("lets an event's subject read it without the category's privilege, and nobody else", () => {
    const own = "GENERATE_PERSONAL_ACCESS_TOKENS"; // what listing its own tokens needs
    expect(canReadPlatformEvent(tokenRevoked, reader("urn:li:corpuser:alice", own))).toBe(true);
    expect(canReadPlatformEvent(tokenRevoked, reader("urn:li:corpuser:bob", own))).toBe(false);
    expect(canReadPlatformEvent(tokenRevoked, reader("urn:li:corpuser:bob", "MANAGE_ACCESS_TOKENS"))).toBe(true);
  });

  it("tells its subject nothing the API would not: its own tokens, tasks and schedules need what reading them needs", () => {
    expect(canReadPlatformEvent(tokenRevoked, reader("urn:li:corpuser:alice"))).toBe(false);
    expect(canReadPlatformEvent(tokenRevoked, reader("urn:li:corpuser:alice", "GET_ENTITY"))).toBe(false);
    const task = {
      eventType: "EntityChangeEvent_v1",
      entityType: "dataHubTask",
      category: "TASK",
      subjectActor: "urn:li:corpuser:alice",
    };
    expect(canReadPlatformEvent(task, reader("urn:li:corpuser:alice"))).toBe(false);
    expect(canReadPlatformEvent(task, reader("urn:li:corpuser:alice", "GET_TASK_STATUS"))).toBe(true);
    const suspended = { ...task, entityType: "test", category: "SCHEDULE" };
    expect(canReadPlatformEvent(suspended, reader("urn:li:corpuser:alice"))).toBe(false);
    expect(canReadPlatformEvent(suspended, reader("urn:li:corpuser:alice", "VIEW_TESTS"))).toBe(true);
    const policy = { ...suspended, entityType: "dataHubRetentionPolicy" };
    expect(canReadPlatformEvent(policy, reader("urn:li:corpuser:alice", "VIEW_TESTS"))).toBe(false);
  });

  it("needs every set of a test result's privileges: VIEW_TESTS and GET_ENTITY", () => {
    const flip = {
      eventType: "EntityChangeEvent_v1",
      entityType: "dataset",
      category: "TEST_RESULT",
      subjectActor: null,
    };
    expect(canReadPlatformEvent(flip, reader("urn:li:corpuser:bob", "VIEW_TESTS"))).toBe(false);
    expect(canReadPlatformEvent(flip, reader("urn:li:corpuser:bob", "GET_ENTITY"))).toBe(false);
    expect(canReadPlatformEvent(flip, reader("urn:li:corpuser:bob", "MANAGE_TESTS", "GET_ENTITY"))).toBe(true);
  });

  it("reads an aspect's change with GET_ENTITY, a test definition's with VIEW_TESTS", () => {
    const mcl = { eventType: "MetadataChangeLog_v1", entityType: "dataset", category: null, subjectActor: null };
    expect(canReadPlatformEvent(mcl, reader("urn:li:corpuser:bob", "GET_ENTITY"))).toBe(true);
    expect(canReadPlatformEvent({ ...mcl, entityType: "test" }, reader("urn:li:corpuser:bob", "GET_ENTITY"))).toBe(
      false,
    );
    expect(canReadPlatformEvent({ ...mcl, entityType: "test" }, reader("urn:li:corpuser:bob", "VIEW_TESTS"))).toBe(
      true,
    );
  });

  it("lets nobody read a kind it does not know, not even its subject", () => {
    const unknown = { ...tokenRevoked, category: "SOMETHING_NEW" };
    const all = reader("urn:li:corpuser:alice", "MANAGE_ACCESS_TOKENS", "GET_ENTITY", "MANAGE_SYSTEM_OPERATIONS");
    expect(canReadPlatformEvent(unknown, all)).toBe(false);
  });
});
