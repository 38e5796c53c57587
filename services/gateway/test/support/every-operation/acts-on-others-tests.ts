/** The seventh principal's rows (others-context.ts's `OthersRow`) on metadata tests, their runs and evaluations. */
import { eventually } from "@mdp/core/testing";
import { DEFINITION, testInput } from "./principals";
import {
  expectPushWithoutOwnersAuthority,
  OWNER,
  TAGGING,
  testOf,
  UPDATE_TEST,
  type OthersRow,
} from "./others-context";

export const TEST_ROWS: OthersRow[] = [
  // Tests
  {
    operation: "Mutation.createTest",
    use: "with the id of another user's test",
    holds: ["MANAGE_TESTS"],
    async run(c) {
      const test = await c.ownersTest();
      const res = await c.gql(
        `mutation($i: CreateTestInput!) { createTest(input: $i) }`,
        { i: { ...testInput(), id: test.slice("urn:li:test:".length) } },
        c.caller.headers,
      );
      expect(res.detail).not.toBe("ok");
      expect((await testOf(c.h, test)).ownerUrn).toBe(OWNER);
    },
  },
  {
    operation: "Mutation.updateTest",
    use: "another user's definition",
    holds: ["MANAGE_TESTS"],
    async run(c) {
      const test = await c.ownersTest();
      const res = await c.gql(
        UPDATE_TEST,
        { u: test, i: { ...testInput(), definition: { json: DEFINITION.replace("description", "name") } } },
        c.caller.headers,
      );
      expect(res.detail).toBe("ok");
      const row = await testOf(c.h, test);
      expect({ owner: row.ownerUrn, via: row.ownerTokenId }).toEqual({ owner: c.caller.urn, via: c.caller.token.id });
    },
  },
  {
    operation: "Mutation.updateTest",
    use: "activating another user's test whose actions the caller may not write",
    holds: ["MANAGE_TESTS"],
    async run(c) {
      const test = await c.ownersTest({ definition: { json: TAGGING }, state: "INACTIVE" });
      const res = await c.gql(
        UPDATE_TEST,
        { u: test, i: { ...testInput(), definition: { json: TAGGING }, state: "ACTIVE" } },
        c.caller.headers,
      );
      expect(res.outcome).toBe("FORBIDDEN");
      const row = await testOf(c.h, test);
      expect({ state: row.state, owner: row.ownerUrn }).toEqual({ state: "INACTIVE", owner: OWNER });
    },
  },
  {
    operation: "Mutation.updateTest",
    use: "activating another user's test",
    holds: ["MANAGE_TESTS", "EDIT_ENTITY_TAGS"],
    async run(c) {
      const test = await c.ownersTest({ definition: { json: TAGGING }, state: "INACTIVE" });
      const res = await c.gql(
        UPDATE_TEST,
        { u: test, i: { ...testInput(), definition: { json: TAGGING }, state: "ACTIVE" } },
        c.caller.headers,
      );
      expect(res.detail).toBe("ok");
      expect((await testOf(c.h, test)).ownerUrn).toBe(c.caller.urn);
    },
  },
  {
    operation: "Mutation.updateTest",
    use: "turning on another user's evaluation on change",
    holds: ["MANAGE_TESTS", "EDIT_ENTITY_TAGS"],
    async run(c) {
      const test = await c.ownersTest({ definition: { json: TAGGING } });
      const res = await c.gql(
        UPDATE_TEST,
        { u: test, i: { ...testInput(), definition: { json: TAGGING }, evaluateOnChange: true } },
        c.caller.headers,
      );
      expect(res.detail).toBe("ok");
      expect((await testOf(c.h, test)).ownerUrn).toBe(c.caller.urn);
    },
  },
  {
    operation: "Mutation.resumeTestSchedule",
    use: "another user's suspended schedule",
    holds: ["MANAGE_TESTS", "EDIT_ENTITY_TAGS"],
    async run(c) {
      const test = await c.ownersTest({ definition: { json: TAGGING }, schedule: { cron: "0 3 * * *" } });
      await c.h.prisma.metadataTest.update({
        where: { urn: test },
        data: { suspendedAt: new Date(), suspendedReason: "matrix" },
      });
      const res = await c.gql(`mutation($u: String!) { resumeTestSchedule(urn: $u) }`, { u: test }, c.caller.headers);
      expect(res.detail).toBe("ok");
      expect((await testOf(c.h, test)).ownerUrn).toBe(c.caller.urn);
    },
  },
  {
    operation: "Mutation.runTest",
    use: "another user's test, with push",
    holds: ["MANAGE_TESTS"],
    async run(c) {
      const test = await c.ownersTest({ definition: { json: TAGGING } });
      const entity = await c.freshEntity();
      const res = await c.gql(`mutation($u: String!) { runTest(urn: $u, push: true) }`, { u: test }, c.caller.headers);
      expect(res.detail).toBe("ok");
      const taskId = res.data!.runTest as string;
      const task = await eventually(
        "the run completes",
        () => c.h.prisma.task.findFirstOrThrow({ where: { id: taskId.split(":").at(-1) } }),
        { until: (row) => row.state === "completed" },
      );
      expect(task.createdBy).toBe(c.caller.urn);
      await expectPushWithoutOwnersAuthority(c, entity, test);
    },
  },
  {
    operation: "Mutation.runTests",
    use: "an entity another user's test selects",
    holds: ["MANAGE_TESTS"],
    async run(c) {
      const test = await c.ownersTest({ definition: { json: TAGGING } });
      const entity = await c.freshEntity();
      const res = await c.gql(`mutation($u: String!) { runTests(urn: $u) }`, { u: entity }, c.caller.headers);
      expect(res.detail).toBe("ok");
      await expectPushWithoutOwnersAuthority(c, entity, test);
    },
  },
  {
    operation: "Mutation.runTestDefinition",
    use: "an entity, with actions the caller may not write",
    holds: ["MANAGE_TESTS"],
    async run(c) {
      const entity = await c.freshEntity();
      const res = await c.gql(
        `mutation($u: String!, $t: TestDefinitionInput!) { runTestDefinition(urn: $u, test: $t) { status } }`,
        { u: entity, t: { json: TAGGING } },
        c.caller.headers,
      );
      expect(res.outcome).toBe("FORBIDDEN");
      expect(await c.tagsOf(entity)).toEqual([]);
    },
  },
  {
    operation: "Mutation.deleteTest",
    use: "another user's test",
    holds: ["MANAGE_TESTS"],
    async run(c) {
      const test = await c.ownersTest();
      const res = await c.gql(`mutation($u: String!) { deleteTest(urn: $u) }`, { u: test }, c.caller.headers);
      expect(res.detail).toBe("ok");
      expect(await c.h.prisma.metadataTest.count({ where: { urn: test } })).toBe(0);
    },
  },
  {
    operation: "POST /test?action=evaluate",
    use: "another user's test, with push",
    holds: ["MANAGE_TESTS"],
    async run(c) {
      const test = await c.ownersTest({ definition: { json: TAGGING } });
      const entity = await c.freshEntity();
      const res = await c.h.post(
        "/gms/test?action=evaluate",
        { urn: entity, testUrns: [test], push: true },
        c.caller.headers,
      );
      expect(res.status).toBe(200);
      expect(JSON.stringify(res.body.value)).toContain('"missingPrivilege":"EDIT_ENTITY_TAGS"');
      await expectPushWithoutOwnersAuthority(c, entity, test);
    },
  },
  {
    operation: "POST /test?action=batchEvaluate",
    use: "another user's test, with push",
    holds: ["MANAGE_TESTS"],
    async run(c) {
      const test = await c.ownersTest({ definition: { json: TAGGING } });
      const entity = await c.freshEntity();
      const res = await c.h.post(
        "/gms/test?action=batchEvaluate",
        { urns: [entity], testUrns: [test], push: true },
        c.caller.headers,
      );
      expect(res.status).toBe(200);
      await expectPushWithoutOwnersAuthority(c, entity, test);
    },
  },
];
