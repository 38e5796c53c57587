import { randomUUID } from "node:crypto";
import { z } from "zod";
import {
  AppError,
  badInput,
  parseUrnField,
  refuseUnstorable,
  requireIdLength,
  requireLength,
  urnOfNewId,
} from "@mdp/core";

/**
 * Every operation's input is a zod schema declared beside the operation and parsed here, after the operation's
 * privilege check (a caller without the privilege gets its 403 whatever it sent): an HTTP action's body by
 * `addActions` (action-router.ts), a GraphQL operation's arguments by its `resolver` (graphql/resolver.ts), with
 * `parseArgs`, or by its service where which privilege applies depends on them (minting, rotation).
 */

/** Parses a request body with a zod schema; a failure is a 400 naming every problem by its path in the body. */
export function parseBody<S extends z.ZodType>(schema: S, body: unknown): z.output<S> {
  if (body === undefined) throw badInput("Request body must be a JSON object.");
  refuseUnstorable(body, "");
  return parseInput(schema, body);
}

/** As parseBody, for input that is not a stored value (path parameters): a 400 naming every problem by its path. */
export function parseInput<S extends z.ZodType>(schema: S, input: unknown): z.output<S> {
  const parsed = schema.safeParse(input);
  if (parsed.success) return parsed.data;
  const problems = parsed.error.issues.map((issue) => {
    const at = issue.path.length > 0 ? issue.path.join(".") : "body";
    if (issue.code === "unrecognized_keys") return `${at}: unknown field(s) ${issue.keys.join(", ")}`;
    return `${at}: ${issue.message}`;
  });
  throw badInput(`Invalid request: ${problems.join("; ")}`, { problems });
}

/**
 * Parses a GraphQL operation's arguments (`{urn, input: {...}}`) with its contract. GraphQL has checked the types
 * already; the contract holds the limits and formats. A failure is a BAD_USER_INPUT of the first problem in the words
 * the contract gives it (`said`, `rule`), each naming its field as DataHub's clients read it (`input.name must be 1
 * to 256 characters long`); a problem the contract does not word reads `<field>: <zod's words>`.
 */
export function parseArgs<S extends z.ZodType>(schema: S, args: unknown): z.output<S> {
  const parsed = schema.safeParse(args, { reportInput: true, error: unworded });
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0]!;
  const check = issue.code === "custom" ? (issue.params?.[RULE] as Check<unknown> | undefined) : undefined;
  // A rule's own error, details included, as the hand check it wraps throws it.
  const refusal = check && refusalOf(check, fieldPath(issue.path), issue.input);
  throw refusal ?? badInput(issue.message);
}

/** Where a problem is, as messages name fields: `input.actors.users[0]`. */
export function fieldPath(path: readonly PropertyKey[]): string {
  return path.reduce<string>(
    (at, key) => (typeof key === "number" ? `${at}[${key}]` : at ? `${at}.${String(key)}` : String(key)),
    "",
  );
}

/**
 * The words of a zod check's problem, given the field's path and the value: `z.string().max(256, said((at) =>
 * `${at} is too long`))`.
 */
export function said(words: (at: string, value: unknown) => string) {
  return {
    error: (issue: { path?: PropertyKey[]; input?: unknown }) => words(fieldPath(issue.path ?? []), issue.input),
  };
}

/** A check in @mdp/core's hand style: throws a BAD_USER_INPUT naming the field `at` (requireLength, parseUrnField). */
type Check<T> = (at: string, value: T) => void;
const RULE = "rule";

/**
 * A refinement made of a check that throws (`.refine(...rule((at, v) => requireLength(at, v, {max: 2000})))`): the
 * problem is the error the check throws at the field's path, worded and detailed as it words it, so a limit keeps the
 * one wording @mdp/core gives it wherever it is met. The check must not depend on `at` to pass or fail.
 */
export function rule<T>(check: Check<T>) {
  return [
    (value: T) => refusalOf(check, "", value) === undefined,
    {
      params: { [RULE]: check },
      ...said((at, value) => refusalOf(check, at, value as T)?.message ?? `${at} is invalid`),
    },
  ] as const;
}

/**
 * A transform made of a function that checks and converts, throwing as `rule`'s checks do
 * (`.transform(parsedBy((at, text) => acceptDefinition(text, registry)))`): its problem is reported as `rule`'s.
 */
export function parsedBy<T, O>(convert: (at: string, value: T) => O) {
  return (value: T, ctx: z.core.$RefinementCtx<T>): O => {
    try {
      return convert("", value);
    } catch (error) {
      if (!(error instanceof AppError && error.code === "BAD_USER_INPUT")) throw error;
      ctx.addIssue({ code: "custom", input: value, params: { [RULE]: convert } });
      return z.NEVER;
    }
  };
}

/** A urn (of `entityType` when given), refused as parseUrnField refuses it. */
export const urnField = (entityType?: string) =>
  z.string().refine(
    ...rule((at, value: string) => {
      parseUrnField(at, value, entityType);
    }),
  );

/** Text of `min` to `max` characters as PostgreSQL counts them (requireLength); with `trim`, trimmed first. */
export const textField = (limits: { min?: number; max: number; trim?: boolean }) =>
  (limits.trim ? z.string().trim() : z.string()).refine(
    ...rule((at, value: string) => requireLength(at, value, limits)),
  );

/**
 * A whole number from `min` to `max`, `fallback` when absent (a page's count, a list's limit); out of range or not
 * whole, the problem names the field and the range.
 */
export const wholeNumberField = (
  min: number,
  max: number,
  fallback: number,
  words = (at: string) => `${at} must be between ${min} and ${max}`,
) =>
  z
    .number()
    .int(said(words))
    .min(min, said(words))
    .max(max, said(words))
    .nullish()
    .transform((value) => value ?? fallback);

/** A page's start: 0 or more, 0 when absent. */
export const startField = () =>
  z
    .number()
    .int(said((at) => `${at} must be 0 or more`))
    .min(
      0,
      said((at) => `${at} must be 0 or more`),
    )
    .nullish()
    .transform((start) => start ?? 0);

/** The urn of a new entity from the id its creator names (or a generated one), refused as urnOfNewId refuses it. */
export const newUrnField = (namespace: string, entityType: string) =>
  z
    .string()
    .nullish()
    .transform(
      parsedBy((at, id: string | null | undefined) =>
        urnOfNewId(at, id, { namespace, entityType, generate: randomUUID }),
      ),
    );

/** An id the caller names (a tokenId): no longer than MAX_ID_LENGTH (requireIdLength). */
export const idField = () => z.string().refine(...rule(requireIdLength));

function refusalOf<T>(check: Check<T>, at: string, value: T): AppError | undefined {
  try {
    check(at, value);
    return undefined;
  } catch (error) {
    if (error instanceof AppError && error.code === "BAD_USER_INPUT") return error;
    throw error;
  }
}

function unworded(issue: z.core.$ZodRawIssue): string {
  const words = z.config().localeError?.(issue);
  return `${fieldPath(issue.path ?? [])}: ${(typeof words === "string" ? words : words?.message) ?? "is invalid"}`;
}
