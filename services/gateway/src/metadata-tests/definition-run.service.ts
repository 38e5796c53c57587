import { createHash, randomUUID } from "node:crypto";
import { z } from "zod";
import { makeUrn, type Config, type EntityRegistry } from "@mdp/core";
import { normalizedDefinitionText } from "@mdp/metadata-tests";
import type { Actor } from "../auth/actor";
import { parsedBy, urnField } from "../shared/validate";
import type { PolicyEngine } from "../policies/policy-engine";
import { requireActionPrivileges } from "./action-privileges";
import type { EvaluationService } from "./evaluation.service";
import { acceptDefinition } from "./test-definition";

/** runTestDefinition's answer (DataHub's RunTestDefinitionStatus): NONE when the definition does not select the entity. */
export type RunTestDefinitionStatus = "PASS" | "FAIL" | "NONE";

/** DataHub's TestDefinitionInput: `json` is nullable there, required here (BAD_USER_INPUT naming it). */
const definitionInput = (registry: EntityRegistry) =>
  z.object({
    json: z.string().transform(parsedBy((_at, text: string) => acceptDefinition(text, registry))),
  });

/**
 * The tests UI's operations that evaluate (docs/api.md "Metadata tests in DataHub's tests UI"): runTestDefinition tries
 * a definition that is not saved on one entity, runTests evaluates and pushes every ACTIVE test of one entity. Both
 * go the way evaluate goes (EvaluationService): the evaluation worker's threads under EVALUATION_TIME_LIMIT_MS and
 * the memory limit, the caller's evaluation rate limits, never this process's event loop.
 */
export class DefinitionRunService {
  /** runTestDefinition's contract (the definition's entity types are the registry's) */
  readonly runDefinitionArgs;

  constructor(
    private readonly engine: PolicyEngine,
    registry: EntityRegistry,
    private readonly evaluation: Pick<EvaluationService, "evaluateOne">,
    private readonly config: Pick<Config, "URN_NAMESPACE">,
  ) {
    this.runDefinitionArgs = z.object({
      urn: urnField(),
      test: definitionInput(registry),
      mode: z
        .enum(["EVALUATE_ONLY", "DEFAULT"])
        .nullish()
        .transform((mode) => mode ?? "DEFAULT"),
    });
  }

  /**
   * runTestDefinition(urn, test, mode): the definition (parsed and limited as createTest parses it) evaluated against
   * the entity as a test of its own urn, never stored. It needs MANAGE_TESTS, not VIEW_TESTS: a definition of the
   * caller's own is a question about the entity's values (a PASS or FAIL per guess), which only who may save and
   * evaluate tests could ask anyway. EVALUATE_ONLY writes nothing. DEFAULT (DataHub's default: "evaluate, store
   * results, and apply actions") also applies the definition's actions to the entity for the caller, in one
   * transaction with an audit row, as a push applies a saved test's: each action's privilege is needed too (as saving
   * those actions would). No result is stored for a test that does not exist: nothing could read it.
   */
  async runDefinition(
    actor: Actor,
    { urn, test: { json: test }, mode }: z.output<DefinitionRunService["runDefinitionArgs"]>,
  ): Promise<{ status: RunTestDefinitionStatus }> {
    // Without actions, DEFAULT writes nothing either: it needs what EVALUATE_ONLY needs (the web app sends no mode).
    const applyActions = mode === "DEFAULT" && test.definition.actions !== undefined;
    if (applyActions) {
      await requireActionPrivileges(this.engine, actor, test.definition.actions, "apply these test actions");
    }
    // Its own urn for each try: two callers' definitions never meet, nor one a stored test's (not a namespace's id).
    const testUrn = makeUrn(this.config.URN_NAMESPACE, "test", `unsaved-${randomUUID()}`);
    const result = await this.evaluation.evaluateOne(actor, {
      urns: [urn],
      push: false,
      testUrns: [testUrn],
      unsavedTest: {
        urn: testUrn,
        onTypes: test.onTypes,
        definition: test.definition,
        hash: createHash("md5").update(normalizedDefinitionText(test.definition)).digest("hex"),
        applyActions,
      },
    });
    if (result.failing.some((r) => r.test === testUrn)) return { status: "FAIL" };
    if (result.passing.some((r) => r.test === testUrn)) return { status: "PASS" };
    return { status: "NONE" };
  }

  /**
   * runTests(urn): every ACTIVE test whose `on` selects the entity, evaluated and pushed (evaluate with push: true, so
   * MANAGE_TESTS, and the results' actions run for each test's owner). True when none of them fails, as DataHub's.
   */
  async runTests(actor: Actor, { urn }: z.output<typeof runTestsArgs>): Promise<boolean> {
    const result = await this.evaluation.evaluateOne(actor, { urns: [urn], push: true });
    return result.failing.length === 0;
  }
}

export const runTestsArgs = z.object({ urn: urnField() });
