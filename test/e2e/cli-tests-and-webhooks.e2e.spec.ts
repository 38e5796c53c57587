/**
 * mdp, the admin CLI (cli/README.md), as an operator runs it against the real gateway and workers as processes
 * (test/support/cli.ts): webhook subscriptions and their deliveries, and metadata tests (create, evaluate, push, history,
 * diff).
 */
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { startReceiver } from "../../services/gateway/test/support/webhook-receiver";
import { ADMIN, cliHarness } from "../support/cli";
import { systemClient, waitFor } from "../support/services";

describe("mdp, the admin CLI", () => {
  const cli = cliHarness("e2e-cli-tests-and-webhooks");
  const { mdp, graphql } = cli;
  let baseUrl: string;
  let home: string;

  beforeAll(async () => {
    ({ baseUrl, home } = await cli.start({ loggedIn: true }));
  }, 120_000);
  afterAll(() => cli.stop());

  describe("webhooks", () => {
    it("subscribes a receiver (secret shown once), shows its delivery log, replays with the same event id, turns it off and deletes it", async () => {
      const receiver = await startReceiver();
      try {
        const created = await mdp([
          "webhooks",
          "create",
          receiver.url,
          "--event-type",
          "MetadataChangeLog_v1",
          "--json",
        ]);
        expect(created.code).toBe(0);
        const { secret, subscription } = JSON.parse(created.stdout) as { secret: string; subscription: { id: string } };
        expect(secret).toMatch(/^whsec_/);
        const listed = await mdp(["webhooks", "list"]);
        expect(listed.stdout).toContain(subscription.id);

        const entity = "urn:li:dataset:(urn:li:dataPlatform:hive,db.hooked,PROD)";
        const ingested = await fetch(`${baseUrl}/gms/aspects?action=ingestProposal`, {
          method: "POST",
          headers: systemClient(ADMIN),
          body: JSON.stringify({
            proposal: {
              entityType: "dataset",
              entityUrn: entity,
              aspectName: "datasetProperties",
              changeType: "UPSERT",
              aspect: { contentType: "application/json", value: JSON.stringify({ description: "hooked" }) },
            },
          }),
        });
        expect(ingested.status).toBe(200);
        await waitFor("the receiver got the event", async () => receiver.received.length >= 1, 30_000);
        const eventId = receiver.received[0]!.headers["mdp-event-id"];

        const log = await mdp(["webhooks", "deliveries", subscription.id, "--json"]);
        const { deliveries } = JSON.parse(log.stdout) as { deliveries: Array<{ eventId: string; status: string }> };
        expect(deliveries).toEqual([expect.objectContaining({ eventId, status: "DELIVERED" })]);
        const table = await mdp(["webhooks", "deliveries", subscription.id]);
        expect(table.stdout).toMatch(/DELIVERED/);

        const replayed = await mdp(["webhooks", "replay", subscription.id, "--since", "1h"]);
        expect(replayed).toMatchObject({ code: 0, stdout: "replaying 1 delivery\n" });
        await waitFor("the replay arrived", async () => receiver.received.length >= 2, 30_000);
        expect(receiver.received[1]!.headers["mdp-event-id"]).toBe(eventId);

        expect((await mdp(["webhooks", "disable", subscription.id])).stdout).toBe(
          `subscription ${subscription.id} is off\n`,
        );
        expect((await mdp(["webhooks", "delete", subscription.id])).code).toBe(1); // no terminal, no --yes
        expect((await mdp(["webhooks", "delete", subscription.id, "--yes"])).code).toBe(0);
        expect((await mdp(["webhooks", "deliveries", subscription.id])).code).toBe(3);
      } finally {
        await receiver.close();
      }
    });
  });

  describe("metadata tests", () => {
    const entity = "urn:li:dataset:(urn:li:dataPlatform:hive,db.orders,PROD)";

    beforeAll(async () => {
      const res = await fetch(`${baseUrl}/gms/aspects?action=ingestProposal`, {
        method: "POST",
        headers: systemClient(ADMIN),
        body: JSON.stringify({
          proposal: {
            entityType: "dataset",
            entityUrn: entity,
            aspectName: "datasetProperties",
            changeType: "UPSERT",
            aspect: { contentType: "application/json", value: JSON.stringify({ description: "orders" }) },
          },
        }),
      });
      expect(res.status).toBe(200);
    });

    it("creates tests from a whole-test YAML file and from a bare definition with --name/--category, and lists them", async () => {
      const whole = path.join(home, "owned.yaml");
      writeFileSync(
        whole,
        "id: owned\nname: Datasets have an owner\ncategory: Ownership\ndefinition:\n  on: {types: [dataset]}\n  rules:\n    - {property: ownership.owners.owner, operator: exists}\n",
      );
      expect(await mdp(["tests", "create", whole])).toMatchObject({
        code: 0,
        stdout: "created test urn:li:test:owned\n",
      });
      const bare = path.join(home, "described.json");
      writeFileSync(
        bare,
        JSON.stringify({
          on: { types: ["dataset"] },
          rules: [{ property: "datasetProperties.description", operator: "exists" }],
        }),
      );
      const created = await mdp([
        "tests",
        "create",
        bare,
        "--id",
        "described",
        "--name",
        "Described",
        "--category",
        "Docs",
        "--json",
      ]);
      expect(JSON.parse(created.stdout)).toEqual({ urn: "urn:li:test:described" });

      const listed = await mdp(["tests", "list"]);
      expect(listed.stdout).toMatch(
        /│ urn:li:test:owned +│ Datasets have an owner +│ Ownership +│ ACTIVE +│ dataset +│/,
      );
      expect(listed.stdout).toContain("showing 1-2 of 2 tests");
    });

    it("refuses an invalid definition with the server's message and exit 1", async () => {
      const bad = path.join(home, "bad.yaml");
      writeFileSync(
        bad,
        "name: Bad\ncategory: X\ndefinition:\n  on: {types: [dataset]}\n  rules: [{property: urn, operator: sounds_like, value: x}]\n",
      );
      const run = await mdp(["tests", "create", bad]);
      expect(run.code).toBe(1);
      expect(run.stderr).toMatch(/^mdp: Failed to validate test definition: /);
    });

    it("evaluates an entity: passing and failing tests, each failing rule with what it expected and found", async () => {
      const json = await mdp(["tests", "evaluate", entity, "--json"]);
      expect(json.code).toBe(0);
      const result = JSON.parse(json.stdout) as {
        passing: Array<{ test: string }>;
        failing: Array<{ test: string; failedRules: Array<{ message: string }> }>;
      };
      expect(result.passing.map((r) => r.test)).toEqual(["urn:li:test:described"]);
      expect(result.failing.map((r) => r.test)).toEqual(["urn:li:test:owned"]);
      const message = result.failing[0]!.failedRules[0]!.message;

      const table = await mdp(["tests", "evaluate", entity]);
      expect(table.code).toBe(0);
      expect(table.stdout).toMatch(/│ PASS +│ urn:li:test:described +│/);
      expect(table.stdout).toMatch(/│ FAIL +│ urn:li:test:owned +│ rules\S*: ownership\.owners\.owner exists +│/);
      expect(table.stdout).toContain(message);
      expect(table.stdout).toContain("1 passing, 1 failing");

      const gate = await mdp(["tests", "evaluate", entity, "--test", "urn:li:test:owned", "--exit-code"]);
      expect(gate.code).toBe(6);
      const passes = await mdp(["tests", "evaluate", entity, "--test", "urn:li:test:described", "--exit-code"]);
      expect(passes.code).toBe(0);
    });

    it("shows the actions a push would take, then took, then finds nothing left to change", async () => {
      const file = path.join(home, "tagged.yaml");
      writeFileSync(
        file,
        // Off, so that creating it pushes nothing by itself: the pushes below are the ones asked for.
        "id: tagged\nname: Owned or marked\ncategory: Ownership\nevaluateOnChange: false\ndefinition:\n" +
          "  on: {types: [dataset]}\n" +
          "  rules:\n    - {property: ownership.owners.owner, operator: exists}\n" +
          "  actions:\n    failing: [{type: ADD_TAGS, params: {values: ['urn:li:tag:unowned']}}]\n",
      );
      expect((await mdp(["tests", "create", file])).code).toBe(0);
      const only = ["--test", "urn:li:test:tagged"];
      const row = (state: string) =>
        new RegExp(`│ urn:li:test:tagged +│ ADD_TAGS +│ values: urn:li:tag:unowned +│ ${state} +│`);

      expect((await mdp(["tests", "evaluate", entity, ...only])).stdout).toMatch(row("would change"));
      const pushed = await mdp(["tests", "evaluate", entity, ...only, "--push"]);
      expect(pushed.stdout).toMatch(/│ test +│ action +│ params +│ push +│/);
      expect(pushed.stdout).toMatch(row("changed"));
      expect((await mdp(["tests", "evaluate", entity, ...only, "--push"])).stdout).toMatch(row("no change"));
    });

    it("shows since when a pushed result holds (tests history), and schedules a test (tests create --schedule)", async () => {
      // The pushes above stored one result of urn:li:test:tagged: failing, its first.
      const history = await mdp(["tests", "history", entity, "urn:li:test:tagged"]);
      expect(history.code).toBe(0);
      expect(history.stdout).toMatch(/^failing since /);
      expect(history.stdout).toMatch(/│ FAIL +│ \(first result\) +│/);
      const json = JSON.parse((await mdp(["tests", "history", entity, "urn:li:test:tagged", "--json"])).stdout) as {
        total: number;
        transitions: Array<{ type: string; previousType: string | null }>;
      };
      expect(json).toMatchObject({ total: 1, transitions: [{ type: "FAILURE", previousType: null }] });

      const file = path.join(home, "nightly.yaml");
      writeFileSync(file, "on: {types: [dataset]}\nrules: [{property: urn, operator: exists}]\n");
      const named = ["--id", "nightly", "--name", "Nightly", "--category", "Ops"];
      const tooOften = await mdp(["tests", "create", file, ...named, "--schedule", "*/30 * * * * *"]);
      expect(tooOften.code).toBe(1);
      expect(tooOften.stderr).toMatch(
        /input\.schedule\.cron: '\*\/30 \* \* \* \* \*' fires 30 s apart .*at most once every 60 s/,
      );
      expect((await mdp(["tests", "create", file, ...named, "--schedule", "0 3 * * *"])).code).toBe(0);
      expect((await mdp(["tests", "list"])).stdout).toMatch(
        /│ urn:li:test:nightly +│ Nightly +│ Ops +│ ACTIVE +│ dataset +│ 0 3 \* \* \*, next /,
      );
    });

    it("shows what a run changed since the test's previous run (tests diff)", async () => {
      const file = path.join(home, "described.yaml");
      writeFileSync(
        file,
        // Off, so that creating it starts no run by itself: the run below is the first.
        "id: run-diffed\nname: Run diffed\ncategory: Docs\nevaluateOnChange: false\ndefinition:\n" +
          "  on: {types: [dataset]}\n  rules: [{property: datasetProperties.description, operator: exists}]\n",
      );
      expect((await mdp(["tests", "create", file])).code).toBe(0);
      const none = await mdp(["tests", "diff", "urn:li:test:run-diffed"]);
      expect(none).toMatchObject({ code: 3, stderr: expect.stringMatching(/has no recorded run/) });
      const { data } = await graphql(
        ADMIN,
        `
          mutation {
            runTest(urn: "urn:li:test:run-diffed")
          }
        `,
      );
      const runId = data.runTest as unknown as string;
      await waitFor(
        `run ${runId} completed`,
        async () => {
          const status = JSON.parse((await mdp(["tasks", "status", runId, "--json"])).stdout) as { state: string };
          return status.state === "completed";
        },
        30_000,
      );
      const diff = await mdp(["tests", "diff", "urn:li:test:run-diffed", runId]);
      expect(diff.code).toBe(0);
      expect(diff.stdout).toMatch(new RegExp(`^run ${runId} of urn:li:test:run-diffed: \\d+ entities evaluated`));
      expect(diff.stdout).toMatch(
        /│ urn:li:dataset:\(urn:li:dataPlatform:hive,db\.orders,PROD\) +│ was without a result +│/,
      );
      expect(diff.stdout).toMatch(/│ newly passing +│/);
      // one line per list; flapping's says what counts as flapping
      expect(diff.stdout.match(/^flapping:/gm)).toHaveLength(1);
      expect(diff.stdout).toMatch(/^flapping: 0 \(more than \d+ changes? in the last \d+ runs?, since .+\)$/m);
      const json = JSON.parse((await mdp(["tests", "diff", "urn:li:test:run-diffed", "--json"])).stdout) as Record<
        string,
        unknown
      >;
      expect(json).toMatchObject({ runId, newlyPassing: { truncated: false } });

      // Before saving an edit: orders would fail a rule it cannot meet; nothing is saved.
      const edited = path.join(home, "run-diffed-edited.yaml");
      writeFileSync(
        edited,
        "on: {types: [dataset]}\nrules: [{property: datasetProperties.description, operator: contains_str, value: zzz}]\n",
      );
      const preview = await mdp(["tests", "preview", "urn:li:test:run-diffed", edited]);
      expect(preview.code).toBe(0);
      expect(preview.stdout).toMatch(
        /^urn:li:test:run-diffed, edited: evaluated on all \d+ entities .*; nothing was saved$/m,
      );
      expect(preview.stdout).toMatch(/│ pass → fail +│ [1-9]\d* +│ .*db\.orders/);
      const impact = JSON.parse(
        (await mdp(["tests", "preview", "urn:li:test:run-diffed", edited, "--sample", "1", "--json"])).stdout,
      ) as Record<string, unknown>;
      expect(impact).toMatchObject({ sampled: 1, sampleSize: 1 });

      // Saving what was previewed: the same file; a bare definition keeps the test's name and category.
      const saved = await mdp(["tests", "update", "urn:li:test:run-diffed", edited]);
      expect(saved).toMatchObject({ code: 0, stdout: "updated test urn:li:test:run-diffed\n" });
      const stored = await graphql(
        ADMIN,
        `
          {
            test(urn: "urn:li:test:run-diffed") {
              name
              category
              definition {
                json
              }
            }
          }
        `,
      );
      expect(stored.data.test).toMatchObject({
        name: "Run diffed",
        category: "Docs",
        definition: { json: readFileSync(edited, "utf8") },
      });
      const renamed = await mdp(["tests", "update", "urn:li:test:run-diffed", edited, "--name", "Renamed", "--json"]);
      expect(JSON.parse(renamed.stdout)).toEqual({ urn: "urn:li:test:run-diffed", updated: true });
      expect((await mdp(["tests", "update", "urn:li:test:absent", edited])).code).toBe(3);
    });
  });
});
