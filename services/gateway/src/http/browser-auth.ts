import type { RequestHandler } from "express";
import { unauthenticated } from "@mdp/core";

/**
 * Pages for browsers (the queue dashboard, the API viewer, the GraphQL explorer) behind the same authentication as
 * every route: a browser can only send Basic auth, so an access token may be the Basic password (any user name), and
 * an unauthenticated page request is answered with a Basic challenge, so a browser asks for credentials while an API
 * client sees the same 401 it gets anywhere.
 */

/** The access token a Basic header carries as its password (any user name), or undefined when it carries none. */
export function accessTokenInBasic(header: string | undefined): string | undefined {
  if (!header?.toLowerCase().startsWith("basic ")) return undefined;
  const decoded = Buffer.from(header.slice(6).trim(), "base64").toString("utf8");
  const password = decoded.slice(decoded.indexOf(":") + 1);
  return /^[\w-]+\.[\w-]+\.[\w-]+$/.test(password) ? password : undefined;
}

/**
 * Turns a Basic header whose password is an access token into the Bearer credential it is, before authentication
 * runs. Anything else passes unchanged (the system client's Basic credentials with the X-Platform-Actor they need).
 */
export const basicTokenAsBearer: RequestHandler = (req, _res, next) => {
  const token = accessTokenInBasic(req.headers.authorization);
  if (token !== undefined) req.headers.authorization = `Bearer ${token}`;
  next();
};

/**
 * As basicTokenAsBearer for a page only a browser uses: any other Basic password, which a browser cannot send with
 * X-Platform-Actor, is a mistyped token, and `page` says so rather than speak of system client credentials.
 */
export function pageTokenAsBearer(page: string): RequestHandler {
  return (req, res, next) => {
    const header = req.headers.authorization;
    const isBasic = header?.toLowerCase().startsWith("basic ") === true;
    if (isBasic && accessTokenInBasic(header) === undefined && req.headers["x-platform-actor"] === undefined) {
      return next(unauthenticated(`${page}'s password must be an access token (any user name); this one is not.`));
    }
    basicTokenAsBearer(req, res, next);
  };
}

/** Answers a page's 401s with a Basic challenge naming `realm`, so a browser asks for credentials. */
export function basicChallenge(realm: string): RequestHandler {
  const challenge = `Basic realm="${realm} (user: anything, password: an access token)"`;
  return (_req, res, next) => {
    res.setHeader("WWW-Authenticate", challenge);
    next();
  };
}
