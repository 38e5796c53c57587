import { randomUUID } from "node:crypto";
import { z } from "zod";
import { AppError, notFound, serviceUnavailable, type EntityRegistry, type Logger } from "@mdp/core";
import { findTest, type PrismaClient } from "@mdp/db";
import {
  JobFailedError,
  JobWaitTimeoutError,
  PREVIEW_MAX_SAMPLE,
  previewTestReply,
  ReplyChannelLostError,
  type Producer,
  type ReplyInbox,
} from "@mdp/queues";
import type { Actor } from "../auth/actor";
import type { RateLimits } from "../shared/rate-limits";
import { parsedBy, said, urnField } from "../shared/validate";
import type { PolicyEngine } from "../policies/policy-engine";
import { requireActionPrivileges } from "./action-privileges";
import { acceptDefinition } from "./test-definition";

/** previewTestImpact's sample when the caller names none. */
export const DEFAULT_PREVIEW_SAMPLE = 1_000;

const sampleWords = said((at) => `${at} must be a whole number from 1 to ${PREVIEW_MAX_SAMPLE}`);
const previewArgs = (registry: EntityRegistry) =>
  z.object({
    urn: urnField("test"),
    definition: z.object({
      json: z.string().transform(parsedBy((_at, text: string) => acceptDefinition(text, registry))),
    }),
    sampleSize: z
      .number()
      .int(sampleWords)
      .min(1, sampleWords)
      .max(PREVIEW_MAX_SAMPLE, sampleWords)
      .nullish()
      .transform((n) => n ?? DEFAULT_PREVIEW_SAMPLE),
  });

export interface TestImpactServiceDeps {
  prisma: PrismaClient;
  registry: EntityRegistry;
  engine: PolicyEngine;
  producer: Producer<"evaluate">;
  /** the gateway's evaluate-tests reply channel (read when a preview is asked: it opens after the services) */
  inbox: () => Pick<ReplyInbox, "channelFor" | "enqueueAndWait">;
  /** EVALUATE_TIMEOUT_MS: how long the caller waits */
  timeoutMs: number;
  logger: Logger;
  rateLimits?: Pick<RateLimits, "consume">;
}

/**
 * previewTestImpact (docs/api.md "Metadata tests"): before saving an edited definition of an existing test, how many
 * entities would flip and which actions would fire. The gateway only checks and parses; the evaluation runs in the
 * evaluation worker's thread pool (a previewTest job on the evaluate-tests queue, answered on this gateway's reply
 * channel) under its time and heap limits, never on this event loop. Nothing is written. It needs what saving the
 * edit needs: MANAGE_TESTS and the privileges of the edited definition's actions; each preview counts as one of the
 * caller's runTest calls (RATE_LIMIT_TEST_RUNS_PER_MINUTE).
 */
export class TestImpactService {
  /** previewTestImpact's contract (the definition's entity types are the registry's) */
  readonly args: ReturnType<typeof previewArgs>;

  private readonly prisma: PrismaClient;
  private readonly engine: PolicyEngine;
  private readonly producer: Producer<"evaluate">;
  private readonly inbox: TestImpactServiceDeps["inbox"];
  private readonly timeoutMs: number;
  private readonly logger: Logger;
  private readonly rateLimits: TestImpactServiceDeps["rateLimits"];

  constructor(deps: TestImpactServiceDeps) {
    this.prisma = deps.prisma;
    this.engine = deps.engine;
    this.producer = deps.producer;
    this.inbox = deps.inbox;
    this.timeoutMs = deps.timeoutMs;
    this.logger = deps.logger;
    this.rateLimits = deps.rateLimits;
    this.args = previewArgs(deps.registry);
  }

  async preview(actor: Actor, { urn, definition, sampleSize }: z.output<ReturnType<typeof previewArgs>>) {
    await requireActionPrivileges(this.engine, actor, definition.json.definition.actions);
    if (!(await findTest(this.prisma, urn))) throw notFound(`Test ${urn} does not exist`);
    await this.rateLimits?.consume(actor, "testRuns");
    const inbox = this.inbox();
    const jobId = `preview-${randomUUID()}`;
    let returned: unknown;
    try {
      returned = await inbox.enqueueAndWait(jobId, this.timeoutMs, () =>
        this.producer.enqueue(jobId, {
          kind: "previewTest",
          testUrn: urn,
          definition: definition.json.definition,
          onTypes: definition.json.onTypes,
          sampleSize,
          actorUrn: actor.urn,
          replyTo: inbox.channelFor(jobId),
        }),
      );
    } catch (error) {
      if (error instanceof JobWaitTimeoutError) {
        // Nothing to follow: a preview writes nothing, so its job is left to finish unheard.
        throw new AppError("GATEWAY_TIMEOUT", `The preview did not finish within ${this.timeoutMs} ms.`);
      }
      if (error instanceof ReplyChannelLostError) throw serviceUnavailable("Redis");
      if (error instanceof JobFailedError) {
        this.logger.warn({ jobId, err: error.failedReason }, "an impact preview's job failed");
        throw new AppError("INTERNAL_SERVER_ERROR", "The preview failed in the evaluation worker.");
      }
      throw error;
    }
    const parsed = previewTestReply.safeParse(returned);
    if (!parsed.success) {
      this.logger.error({ jobId, err: parsed.error.message }, "the evaluation worker returned an unexpected preview");
      throw new AppError("INTERNAL_SERVER_ERROR", "The evaluation worker returned an unexpected result.");
    }
    const answer = parsed.data;
    if ("refused" in answer) {
      if (answer.refused === "missing") throw notFound(answer.message);
      // The limit's message names the limit and the setting; a stored definition's, the test and the parser's words.
      throw new AppError(answer.refused === "limit" ? "BAD_USER_INPUT" : "CONFLICT", answer.message);
    }
    return {
      ...answer,
      // A sample covers the whole set when every selected entity was evaluated.
      whole: answer.sampled >= answer.total,
      sampleSize,
      actions: answer.actions.map((a) => ({ ...a, params: JSON.stringify(a.params) })),
    };
  }
}
