import type { Router } from "express";
import { actionRouter } from "../http/action-router";
import type { EvaluationService } from "./evaluation.service";

export interface TestRoutesDeps {
  evaluation: EvaluationService;
}

/** Metadata-test evaluation under /gms/test (CONTRACT.md "POST /gms/test?action=evaluate"). */
export function testRoutes(deps: TestRoutesDeps): Router {
  return actionRouter("/test", {
    evaluate: (body, actor) => deps.evaluation.evaluate(actor, body),
    batchEvaluate: (body, actor) => deps.evaluation.batchEvaluate(actor, body),
  });
}
