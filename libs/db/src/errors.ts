import { notFound } from "@mdp/core";
import { Prisma } from "./generated/prisma/client";

/**
 * Whether `error` is a unique-constraint violation (Prisma's P2002), e.g. a second insert of an existing primary key.
 * Lets callers turn the race "check, then insert" loses into a conflict instead of an internal error.
 */
export function isUniqueViolation(error: unknown): boolean {
  return error instanceof Prisma.PrismaClientKnownRequestError && error.code === "P2002";
}

/**
 * For `.catch` after a transaction that checks a row exists, then updates or deletes it: Prisma's P2025 (the row is
 * gone, deleted by a concurrent request between the check and the write) becomes the NOT_FOUND the check would have
 * answered, with `message`; anything else is rethrown.
 */
export function notFoundWhenMissing(message: string): (error: unknown) => never {
  return (error) => {
    const missing = error instanceof Prisma.PrismaClientKnownRequestError && error.code === "P2025";
    throw missing ? notFound(message) : error;
  };
}

/** PostgreSQL's codes for a value it cannot store: NUL in text (22021) or in jsonb (22P05), too long (22001). */
const UNSTORABLE_VALUE_CODES = new Set(["22021", "22P05", "22001"]);

/**
 * PostgreSQL's reason when `error` is its refusal of a value (from pg directly or through Prisma), else undefined.
 * Input is validated before it gets this far; this is the backstop that turns a case validation missed into the
 * caller's error instead of a 500.
 */
export function unstorableValueReason(error: unknown): string | undefined {
  const e = error as {
    code?: unknown;
    message?: unknown;
    meta?: { driverAdapterError?: { cause?: { originalCode?: unknown; originalMessage?: unknown } } };
  } | null;
  if (typeof e?.code === "string" && UNSTORABLE_VALUE_CODES.has(e.code) && typeof e.message === "string") {
    return e.message;
  }
  const cause = e?.meta?.driverAdapterError?.cause;
  if (typeof cause?.originalCode === "string" && UNSTORABLE_VALUE_CODES.has(cause.originalCode)) {
    return typeof cause.originalMessage === "string" ? cause.originalMessage : "invalid value";
  }
  return undefined;
}
