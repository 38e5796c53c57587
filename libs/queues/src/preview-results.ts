import { z } from "zod";

/** A count of sampled entities whose result flips between the definitions, with some of them named. */
const flips = z.object({ count: z.number(), examples: z.array(z.string()) });

/** One action of the edited definition, and how many sampled entities it would run on at a push. */
export const impactAction = z.object({
  /** SUCCESS: a passing action; FAILURE: a failing one */
  on: z.enum(["SUCCESS", "FAILURE"]),
  type: z.string(),
  params: z.record(z.string(), z.array(z.string())),
  /** sampled entities whose edited result would run it at a push */
  entities: z.number(),
  /** of those, the ones whose result under the current definition would not have run it */
  newly: z.number(),
});

/**
 * What a "previewTest" job's worker answers (previewTestImpact), its return value and its reply to the waiting
 * gateway, which checks it with this contract as it checks evaluate's (results.ts): the impact of an edited definition
 * on a sample, or why there is none (the test is missing, a limit was met, the stored definition no longer parses).
 */
export const previewTestReply = z.union([
  z.object({
    testUrn: z.string(),
    evaluatedAt: z.number(),
    /** entities either definition selects by type */
    total: z.number(),
    /** entities evaluated: the first `sampleSize` in urn order */
    sampled: z.number(),
    passToFail: flips,
    failToPass: flips,
    /** not selected by the current definition, selected by the edited one */
    startsApplying: z.number(),
    /** selected by the current definition, no longer by the edited one */
    stopsApplying: z.number(),
    unchangedPassing: z.number(),
    unchangedFailing: z.number(),
    actions: z.array(impactAction),
  }),
  z.object({ refused: z.enum(["missing", "limit", "stored"]), message: z.string() }),
]);

export type ImpactAction = z.output<typeof impactAction>;
export type ImpactPreview = z.output<typeof previewTestReply>;
