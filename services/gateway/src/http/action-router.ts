import type { Request, Response, Router } from "express";
import type { z } from "zod";
import { abbreviated, AppError, badInput } from "@mdp/core";
import { readerWrote } from "@mdp/db";
import { actorOf } from "../auth/auth.middleware";
import type { Actor } from "../auth/actor";
import type { PolicyEngine } from "../policies/policy-engine";
import type { Privilege } from "../policies/privileges";
import { parseBody, parseInput } from "../shared/validate";
import { JsonText } from "../shared/json-text";

/** The privilege a route requires of every caller, and the words of its 403: "<actor> is unauthorized to <to>." */
export interface RequiredPrivilege {
  privilege: Privilege;
  to: string;
}

/**
 * What a route of the API is, next to its handler: the router checks the privilege and parses the input with these,
 * and the OpenAPI document (api-docs/openapi.ts) is generated from the same objects, so the two cannot drift.
 */
interface RouteContract<S extends z.ZodType, R extends z.ZodType> {
  /** one line for the reference and the OpenAPI document */
  summary: string;
  /** more for the OpenAPI document: limits, errors, what the answer means */
  description?: string;
  /**
   * Checked by the router before the input is read: a caller without it gets the 403 whatever it sent. null when the
   * privilege depends on what the input names (the handler checks it): say which in `privilegeNote`.
   */
  requires: RequiredPrivilege | null;
  /** what the reference says about privileges beyond (or instead of) `requires` */
  privilegeNote?: string;
  /**
   * The answer's `value`, for the OpenAPI document. Not validated at run time; the compiler holds the handler to it
   * (it must return what the schema describes, or JsonText of it).
   */
  response?: R;
  /**
   * Fields the answer may carry beside `value` (the dry run's `plan`), for the OpenAPI document: `value` stays what
   * DataHub's clients parse, and these are for clients that know them. The handler answers them with `Enveloped`.
   */
  alongside?: Record<string, z.ZodType>;
  /** parsed by the router: a 400 names every problem by its path */
  request: S;
  /**
   * The route writes nothing: its caller's next reads need not wait for a replica to replay anything. Without it a
   * POST's answer waits for the primary's WAL position to be noted (read-your-writes; nothing without replicas). A
   * function says it per request (an evaluation writes only when it pushes).
   */
  readOnly?: true | ((input: z.output<S>) => boolean);
}

/** A Rest.li-style action: `POST <path>?action=<name>` with a JSON body (`request`), answered `{"value": ...}`. */
export interface Action<S extends z.ZodType = z.ZodType, R extends z.ZodType = z.ZodType> extends RouteContract<S, R> {
  handler(input: z.output<S>, actor: Actor, req: Request): Answer<R>;
}

/** A GET route whose path parameters are `request` (express `:name` segments), answered `{"value": ...}`. */
export interface GetRoute<S extends z.ZodType = z.ZodType, R extends z.ZodType = z.ZodType> extends RouteContract<
  S,
  R
> {
  handler(params: z.output<S>, actor: Actor, req: Request): Answer<R>;
}

/**
 * A POST route of DataHub's own HTTP APIs (its OpenAPI v3 entities, its auth servlet), whose clients parse the body
 * bare, not Rest.li's `{"value": ...}`: `request` parses `{params, query, body}` (a 400 names every problem by its path
 * there, `body.0.urn`), and the handler's answer is the whole response body.
 */
export interface PostRoute<S extends z.ZodType = z.ZodType, R extends z.ZodType = z.ZodType> extends RouteContract<
  S,
  R
> {
  handler(input: z.output<S>, actor: Actor, req: Request): Promise<z.output<R>>;
}

/** What a handler answers: the `value` its response schema describes (anything without one). */
type Answer<R extends z.ZodType> = Promise<z.output<R> | JsonText | Enveloped<z.output<R>>>;

/** Declares an action; a function only so that the handler's types are inferred from `request` and `response`. */
export function action<S extends z.ZodType, R extends z.ZodType = z.ZodType>(spec: Action<S, R>): Action<S, R> {
  return spec;
}

export type ApiRoute =
  | { kind: "action"; path: string; name: string; spec: Action }
  | { kind: "get"; path: string; spec: GetRoute }
  | { kind: "post"; path: string; spec: PostRoute };

/** The routes added to each router, in the order they were added: what the OpenAPI document describes. */
const routesOf = new WeakMap<Router, ApiRoute[]>();

export function apiRoutes(router: Router): readonly ApiRoute[] {
  return routesOf.get(router) ?? [];
}

function record(router: Router, route: ApiRoute): void {
  const routes = routesOf.get(router) ?? [];
  routes.push(route);
  routesOf.set(router, routes);
}

/** An answer with fields beside `value` (the route's `alongside`): `{"value": ..., ...fields}`. */
export class Enveloped<V> {
  constructor(
    readonly value: V,
    readonly fields: Record<string, unknown>,
  ) {}
}

function send(res: Response, value: unknown): void {
  if (value instanceof JsonText) res.type("json").send(`{"value":${value.json}}`);
  else if (value instanceof Enveloped) res.json({ value: value.value, ...value.fields });
  else res.json({ value });
}

type Guard = Pick<PolicyEngine, "require">;

/**
 * Adds Rest.li-style actions to `router`: `POST <path>?action=<name>` with a JSON body, answered `{"value": ...}`.
 * Per request: the action's privilege, then its body (an action whose fields are all optional may be sent without
 * one), then its handler; a privilege-less caller learns nothing, and a refused request reaches no handler (nor its
 * rate limit). A missing or unknown action is a 400 listing the valid ones; a body that is not JSON is a 415. A route
 * of the router given, not a router of its own: every router a request passes through costs it a prefix match and a
 * dispatch.
 */
export function addActions(router: Router, path: string, engine: Guard, actions: Record<string, Action>): void {
  // A Map, not the object: `actions[name]` would find Object.prototype's members (`constructor`, `valueOf`,
  // `__proto__`, ...) for an action name a caller chose.
  const specs = new Map(Object.entries(actions));
  for (const [name, spec] of specs) record(router, { kind: "action", path, name, spec });
  const valid = () => [...specs.keys()].join(", ");
  router.post(path, async (req: Request, res: Response) => {
    const name = typeof req.query.action === "string" ? req.query.action : undefined;
    const spec = name !== undefined ? specs.get(name) : undefined;
    if (!spec) {
      throw badInput(
        name
          ? `Unknown action '${abbreviated(name)}' for ${path}; valid actions: ${valid()}`
          : `Missing ?action= for ${path}; valid actions: ${valid()}`,
      );
    }
    // The action's name labels the request's metrics (metrics.ts): only names of this route's own actions get here.
    res.locals.action = name;
    // A request without a body needs no type (an action such as getIndexSizes takes none).
    if (hasBody(req) && !req.is("application/json")) {
      throw new AppError("UNSUPPORTED_MEDIA_TYPE", "Content-Type must be application/json.");
    }
    const actor = actorOf(res.locals);
    if (spec.requires) await engine.require(actor, spec.requires.privilege, spec.requires.to);
    const body: unknown = req.body === undefined && spec.request.safeParse({}).success ? {} : req.body;
    const input = parseBody(spec.request, body);
    const answer = await spec.handler(input, actor, req);
    if (!readsOnly(spec, input)) await readerWrote();
    send(res, answer);
  });
  // A GET would otherwise be "No route for GET ...", which reads as if the path did not exist.
  router.all(path, (req: Request, res: Response) => {
    res.setHeader("allow", "POST");
    throw new AppError(
      "METHOD_NOT_ALLOWED",
      `${req.baseUrl}${path} takes POST ?action=<name> with a JSON body; valid actions: ${valid()}`,
    );
  });
}

/** Adds `GET <path>` (express syntax, `:name` for a parameter): the privilege, then the parameters, then the handler. */
export function addGetRoute<S extends z.ZodType, R extends z.ZodType = z.ZodType>(
  router: Router,
  path: string,
  engine: Guard,
  spec: GetRoute<S, R>,
): void {
  record(router, { kind: "get", path, spec: spec as unknown as GetRoute });
  router.get(path, async (req: Request, res: Response) => {
    const actor = actorOf(res.locals);
    if (spec.requires) await engine.require(actor, spec.requires.privilege, spec.requires.to);
    send(res, await spec.handler(parseInput(spec.request, { ...req.params }), actor, req));
  });
}

/**
 * Adds `POST <path>` (express syntax, `:name` for a parameter) answered with the handler's value as the whole body
 * (PostRoute): the privilege, then `{params, query, body}`, then the handler. Another method is a 405 saying so.
 */
export function addPostRoute<S extends z.ZodType, R extends z.ZodType = z.ZodType>(
  router: Router,
  path: string,
  engine: Guard,
  spec: PostRoute<S, R>,
): void {
  record(router, { kind: "post", path, spec: spec as unknown as PostRoute });
  router.post(path, async (req: Request, res: Response) => {
    if (hasBody(req) && !req.is("application/json")) {
      throw new AppError("UNSUPPORTED_MEDIA_TYPE", "Content-Type must be application/json.");
    }
    const actor = actorOf(res.locals);
    if (spec.requires) await engine.require(actor, spec.requires.privilege, spec.requires.to);
    const input = parseBody(spec.request, { params: { ...req.params }, query: { ...req.query }, body: req.body });
    const answer = await spec.handler(input, actor, req);
    if (!readsOnly(spec, input)) await readerWrote();
    res.json(answer);
  });
  router.all(path, (req: Request, res: Response) => {
    res.setHeader("allow", "POST");
    throw new AppError("METHOD_NOT_ALLOWED", `${req.baseUrl}${path} takes POST with a JSON body`);
  });
}

function readsOnly<S extends z.ZodType>(
  spec: { readOnly?: true | ((input: z.output<S>) => boolean) },
  input: z.output<S>,
) {
  return typeof spec.readOnly === "function" ? spec.readOnly(input) : spec.readOnly === true;
}

function hasBody(req: Request): boolean {
  const length = req.headers["content-length"];
  return req.headers["transfer-encoding"] !== undefined || (length !== undefined && length !== "0");
}
