import type { Router } from "express";
import { addActions } from "../http/action-router";
import type { RateLimits } from "../http/rate-limits";
import type { EvaluationService } from "./evaluation.service";

export interface TestRoutesDeps {
  evaluation: EvaluationService;
  rateLimits: RateLimits;
}

/** Metadata-test evaluation under /gms/test (CONTRACT.md "POST /gms/test?action=evaluate"), added to the router of /gms. */
export function addTestRoutes(router: Router, deps: TestRoutesDeps): void {
  addActions(router, "/test", {
    evaluate: async (body, actor) => {
      await deps.rateLimits.consume(actor, "evaluations");
      return deps.evaluation.evaluate(actor, body);
    },
    batchEvaluate: async (body, actor) => {
      // Counted before the body is checked, by the entities asked for: the work a batch costs grows with them.
      const urns = (body as { urns?: unknown } | null)?.urns;
      await deps.rateLimits.consume(actor, "evaluations", Array.isArray(urns) ? urns.length : 1);
      return deps.evaluation.batchEvaluate(actor, body);
    },
  });
}
