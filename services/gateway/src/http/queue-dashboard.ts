import { createBullBoard } from "@bull-board/api";
import { BullMQAdapter } from "@bull-board/api/bullMQAdapter";
import { ExpressAdapter } from "@bull-board/express";
import type { Queue } from "bullmq";
import type { Express, RequestHandler } from "express";
import { AppError, unauthenticated } from "@mdp/core";
import { actorOf } from "../auth/auth.middleware";
import type { PolicyEngine } from "../policies/policy-engine";

export const DASHBOARD_PATH = "/admin/queues";

/**
 * A browser can only send Basic auth, so for the dashboard an access token may be the Basic password (any user name):
 * it is turned into the Bearer credential it is before authentication runs. The system client's Basic credentials are
 * not JWTs and pass through unchanged with the X-Platform-Actor it needs. Any other Basic password, which a browser
 * cannot send with that header, is a mistyped token: it is told so, rather than told about system client credentials.
 */
export const basicTokenAsBearer: RequestHandler = (req, _res, next) => {
  const header = req.headers.authorization;
  if (header?.toLowerCase().startsWith("basic ")) {
    const decoded = Buffer.from(header.slice(6).trim(), "base64").toString("utf8");
    const password = decoded.slice(decoded.indexOf(":") + 1);
    if (/^[\w-]+\.[\w-]+\.[\w-]+$/.test(password)) req.headers.authorization = `Bearer ${password}`;
    else if (req.headers["x-platform-actor"] === undefined) {
      return next(
        unauthenticated("The queue dashboard's password must be an access token (any user name); this one is not."),
      );
    }
  }
  next();
};

/** Answers the dashboard's 401s with a Basic challenge, so a browser asks for credentials. */
export const basicChallenge: RequestHandler = (_req, res, next) => {
  res.setHeader("WWW-Authenticate", 'Basic realm="Queue dashboard (user: anything, password: an access token)"');
  next();
};

/** Bull Board over both queues, for holders of MANAGE_SYSTEM_OPERATIONS only. */
export function queueDashboard(queues: Queue[], engine: PolicyEngine): { guard: RequestHandler; router: Express } {
  const serverAdapter = new ExpressAdapter();
  serverAdapter.setBasePath(DASHBOARD_PATH);
  createBullBoard({ queues: queues.map((q) => new BullMQAdapter(q)), serverAdapter });
  const guard: RequestHandler = async (_req, res, next) => {
    try {
      const actor = actorOf(res.locals);
      if (!(await engine.has(actor, "MANAGE_SYSTEM_OPERATIONS"))) {
        throw new AppError("FORBIDDEN", `${actor.urn} is unauthorized to view the queue dashboard.`);
      }
      next();
    } catch (error) {
      next(error);
    }
  };
  // Bull Board's router is an express app of its own, which would announce X-Powered-By on every page it serves.
  const router = serverAdapter.getRouter() as Express;
  router.disable("x-powered-by");
  return { guard, router };
}
