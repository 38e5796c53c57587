import type { Router } from "express";
import { addActions } from "../http/action-router";
import type { EvaluationService } from "./evaluation.service";

export interface TestRoutesDeps {
  evaluation: EvaluationService;
}

/** Metadata-test evaluation under /gms/test (CONTRACT.md "POST /gms/test?action=evaluate"), added to the router of /gms. */
export function addTestRoutes(router: Router, deps: TestRoutesDeps): void {
  addActions(router, "/test", {
    // Rate-limited by the evaluation service, once the privileges and the body have passed.
    evaluate: (body, actor) => deps.evaluation.evaluate(actor, body),
    batchEvaluate: (body, actor) => deps.evaluation.batchEvaluate(actor, body),
  });
}
