import type { RequestHandler } from "express";
import { withReader, type StaleReads } from "@mdp/db";
import type { Actor } from "./actor";
import type { Authenticator } from "./authenticator";

/** Every route after this one needs an authenticated caller; the Actor is left in res.locals for handlers. */
export function authenticate(authenticator: Authenticator, reads?: StaleReads): RequestHandler {
  return async (req, res, next) => {
    try {
      const actor = await authenticator.authenticate(req.headers);
      res.locals.actor = actor;
      // The rest of the request reads as its user: a replica only once it has what the user wrote (read-replicas.ts).
      if (reads) withReader(actor.urn, reads, next);
      else next();
    } catch (error) {
      next(error);
    }
  };
}

export function actorOf(locals: Record<string, unknown>): Actor {
  return locals.actor as Actor;
}
