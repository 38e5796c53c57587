import type { RequestHandler } from "express";
import type { Actor } from "./actor";
import type { Authenticator } from "./authenticator";

/** Every route after this one needs an authenticated caller; the Actor is left in res.locals for handlers. */
export function authenticate(authenticator: Authenticator): RequestHandler {
  return async (req, res, next) => {
    try {
      res.locals.actor = await authenticator.authenticate(req.headers);
      next();
    } catch (error) {
      next(error);
    }
  };
}

export function actorOf(locals: Record<string, unknown>): Actor {
  return locals.actor as Actor;
}
