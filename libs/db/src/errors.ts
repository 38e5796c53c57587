import { Prisma } from "./generated/prisma/client";

/**
 * Whether `error` is a unique-constraint violation (Prisma's P2002), e.g. a second insert of an existing primary key.
 * Lets callers turn the race "check, then insert" loses into a conflict instead of an internal error.
 */
export function isUniqueViolation(error: unknown): boolean {
  return error instanceof Prisma.PrismaClientKnownRequestError && error.code === "P2002";
}
