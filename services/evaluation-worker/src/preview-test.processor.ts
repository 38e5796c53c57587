import { createHash } from "node:crypto";
import type { Job } from "bullmq";
import type { ImpactAction, ImpactPreview, Payload } from "@mdp/queues";
import type { EntityEvaluation, ParsedDefinition } from "@mdp/metadata-tests";
import { EvaluationLimitError, StoredDefinitionError } from "./evaluation-pool";
import type { EvaluateDeps } from "./evaluation-deps";
import type { StoredTest } from "./evaluation.store";

type PreviewPayload = Extract<Payload<"evaluate">, { kind: "previewTest" }>;

/** The edited definition's stand-in urn inside the evaluation: it never leaves the worker. */
const EDITED = "urn:li:test:__impact-preview__";
/** Entities named per flip in the answer, at most (docs/limits.md): the counts are whole. */
export const PREVIEW_EXAMPLES = 20;

type Outcome = "PASS" | "FAIL" | "NONE";

/**
 * An impact preview: the test's current definition and the edited one are evaluated side by side, in one request to
 * the thread pool (EVALUATION_TIME_LIMIT_MS, the heap limit and the per-actor share, as evaluate and runTest), against
 * the first `sampleSize` entities in urn order of the types either selects. Nothing is written: no results, history,
 * actions or task row. The answer goes to the waiting gateway's reply channel, and is the job's return value.
 */
export async function previewTest(deps: EvaluateDeps, payload: PreviewPayload, job: Job): Promise<ImpactPreview> {
  const answer = await impactOf(deps, payload);
  await deps.reply(payload.replyTo, { jobId: job.id!, returnvalue: answer });
  return answer;
}

async function impactOf(deps: EvaluateDeps, payload: PreviewPayload): Promise<ImpactPreview> {
  const current = await deps.store.test(payload.testUrn);
  if (!current) return { refused: "missing", message: `Test ${payload.testUrn} does not exist` };
  const edited: StoredTest = {
    ...current,
    urn: EDITED,
    onTypes: payload.onTypes,
    hash: createHash("md5").update(JSON.stringify(payload.definition)).digest("hex"),
    definition: payload.definition,
  };
  const types = [...new Set([...current.onTypes, ...payload.onTypes])];
  const total = await deps.store.countEntities(types);
  const entities = await deps.store.nextEntities(types, "", payload.sampleSize);
  const evaluatedAt = Date.now();
  if (entities.length === 0) return summarize(payload, evaluatedAt, total, [], undefined);
  const [outcome] = await deps.pool.evaluate(
    {
      actor: payload.actorUrn,
      at: evaluatedAt,
      tests: [current, edited],
      entities: new Map(entities.map((e) => [e.urn, e])),
    },
    [{ urns: entities.map((e) => e.urn), testUrns: [current.urn, EDITED], withValues: false }],
    `${deps.pool.settings.timeLimitMs} ms (EVALUATION_TIME_LIMIT_MS) for a preview of ${entities.length} entities`,
  );
  if (outcome instanceof EvaluationLimitError) {
    // The stand-in urn means nothing to the caller: it is the test as edited.
    const message = outcome.message.replaceAll(EDITED, `${payload.testUrn} (as edited)`);
    return { refused: "limit", message: `${message} Preview fewer entities (sampleSize).` };
  }
  if (outcome instanceof StoredDefinitionError) {
    // The stand-in urn is the edited definition: the gateway's parser accepted it, so only a stored one can be refused.
    return { refused: "stored", message: outcome.message };
  }
  return summarize(payload, evaluatedAt, total, outcome!, payload.definition as ParsedDefinition);
}

function summarize(
  payload: PreviewPayload,
  evaluatedAt: number,
  total: number,
  evaluations: readonly EntityEvaluation[],
  definition: ParsedDefinition | undefined,
): ImpactPreview {
  const of = (e: EntityEvaluation, test: string): Outcome =>
    e.passing.some((r) => r.test === test) ? "PASS" : e.failing.some((r) => r.test === test) ? "FAIL" : "NONE";
  const passToFail = { count: 0, examples: [] as string[] };
  const failToPass = { count: 0, examples: [] as string[] };
  const flip = (into: typeof passToFail, urn: string) => {
    into.count += 1;
    if (into.examples.length < PREVIEW_EXAMPLES) into.examples.push(urn);
  };
  let startsApplying = 0;
  let stopsApplying = 0;
  let unchangedPassing = 0;
  let unchangedFailing = 0;
  const outcomes = evaluations.map((e) => ({ before: of(e, payload.testUrn), after: of(e, EDITED) }));
  evaluations.forEach((e, i) => {
    const { before, after } = outcomes[i]!;
    if (before === "PASS" && after === "FAIL") flip(passToFail, e.urn);
    else if (before === "FAIL" && after === "PASS") flip(failToPass, e.urn);
    else if (before === "NONE" && after !== "NONE") startsApplying += 1;
    else if (before !== "NONE" && after === "NONE") stopsApplying += 1;
    else if (after === "PASS") unchangedPassing += 1;
    else if (after === "FAIL") unchangedFailing += 1;
  });
  const actions: ImpactAction[] = [];
  for (const [list, on, outcome] of [
    ["passing", "SUCCESS", "PASS"],
    ["failing", "FAILURE", "FAIL"],
  ] as const) {
    for (const action of definition?.actions?.[list] ?? []) {
      const firing = outcomes.filter((o) => o.after === outcome);
      actions.push({
        on,
        type: action.type,
        params: action.params,
        entities: firing.length,
        newly: firing.filter((o) => o.before !== outcome).length,
      });
    }
  }
  return {
    testUrn: payload.testUrn,
    evaluatedAt,
    total,
    sampled: evaluations.length,
    passToFail,
    failToPass,
    startsApplying,
    stopsApplying,
    unchangedPassing,
    unchangedFailing,
    actions,
  };
}
