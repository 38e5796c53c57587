import type { Request, Response, Router } from "express";
import { abbreviated, AppError, badInput } from "@mdp/core";
import { actorOf } from "../auth/auth.middleware";
import type { Actor } from "../auth/actor";

export type ActionHandler = (body: unknown, actor: Actor, req: Request) => Promise<unknown>;

/** An answer that is JSON text already (the evaluation worker's results): written into the response as it is. */
export class JsonText {
  constructor(readonly json: string) {}
}

/**
 * Adds Rest.li-style actions to `router`: `POST <path>?action=<name>` with a JSON body, answered `{"value": ...}`. A
 * missing or unknown action is a 400 listing the valid ones; a body that is not JSON is a 415. A route of the router
 * given, not a router of its own: every router a request passes through costs it a prefix match and a dispatch.
 */
export function addActions(router: Router, path: string, actions: Record<string, ActionHandler>): void {
  // A Map, not the object: `actions[name]` would find Object.prototype's members (`constructor`, `valueOf`,
  // `__proto__`, ...) for an action name a caller chose.
  const handlers = new Map(Object.entries(actions));
  router.post(path, async (req: Request, res: Response) => {
    const action = typeof req.query.action === "string" ? req.query.action : undefined;
    const handler = action !== undefined ? handlers.get(action) : undefined;
    if (!handler) {
      const valid = Object.keys(actions).join(", ");
      throw badInput(
        action
          ? `Unknown action '${abbreviated(action)}' for ${path}; valid actions: ${valid}`
          : `Missing ?action= for ${path}; valid actions: ${valid}`,
      );
    }
    // A request without a body needs no type (an action such as getIndexSizes takes none).
    if (hasBody(req) && !req.is("application/json")) {
      throw new AppError("UNSUPPORTED_MEDIA_TYPE", "Content-Type must be application/json.");
    }
    const value = await handler(req.body, actorOf(res.locals), req);
    if (value instanceof JsonText) res.type("json").send(`{"value":${value.json}}`);
    else res.json({ value });
  });
  // A GET would otherwise be "No route for GET ...", which reads as if the path did not exist.
  router.all(path, (req: Request, res: Response) => {
    res.setHeader("allow", "POST");
    throw new AppError(
      "METHOD_NOT_ALLOWED",
      `${req.baseUrl}${path} takes POST ?action=<name> with a JSON body; valid actions: ${Object.keys(actions).join(", ")}`,
    );
  });
}

function hasBody(req: Request): boolean {
  const length = req.headers["content-length"];
  return req.headers["transfer-encoding"] !== undefined || (length !== undefined && length !== "0");
}
