import { z } from "zod";
import { said } from "../http/validate";

export const MAX_PAGE_SIZE = 1000;

/**
 * start/count of a list input, with the defaults and limits of docs/api.md "Conventions": spread into an operation's
 * input contract (`z.object({ ...pageFields, query: ... })`).
 */
export const pageFields = {
  start: z
    .number()
    .min(
      0,
      said((at) => `${at} must be 0 or more`),
    )
    .nullish()
    .transform((start) => start ?? 0),
  count: z
    .number()
    .min(
      0,
      said((at) => `${at} must be between 0 and ${MAX_PAGE_SIZE}`),
    )
    .max(
      MAX_PAGE_SIZE,
      said((at) => `${at} must be between 0 and ${MAX_PAGE_SIZE}`),
    )
    .nullish()
    .transform((count) => count ?? 20),
};

/** A list operation's arguments: `input` with start and count, and what else the operation filters by. */
export const pageInput = <F extends z.ZodRawShape>(filters: F) =>
  z.object({ input: z.object({ ...pageFields, ...filters }) });
