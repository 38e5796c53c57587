import type { TaskRow } from "@mdp/tasks";
import { runTestKind } from "./run-test.processor";

const row = (createdVia: string | null) =>
  ({
    id: "6f0c6a55-8d4b-4f7e-9a57-0d0b8f1f6a11",
    request: { kind: "runTest", testUrn: "urn:li:test:t", push: true, batchSize: 1000 },
    createdBy: "urn:li:corpuser:runner",
    createdVia,
  }) as TaskRow;

describe("runTestKind.requeuePayload", () => {
  it("queues a vanished run again for its creator through the token it was created with", () => {
    const payload = runTestKind.input.parse(runTestKind.requeuePayload(row("2b71c1e0-5d1a-4a55-b0a4-3c9e0f2d7a10")));
    expect(payload).toMatchObject({
      taskId: "6f0c6a55-8d4b-4f7e-9a57-0d0b8f1f6a11",
      actorUrn: "urn:li:corpuser:runner",
      actorTokenId: "2b71c1e0-5d1a-4a55-b0a4-3c9e0f2d7a10",
    });
    // Created through no token (the system client, a schedule's firing): none.
    expect(runTestKind.input.parse(runTestKind.requeuePayload(row(null)))).not.toHaveProperty("actorTokenId");
  });
});
