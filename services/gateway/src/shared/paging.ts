import { z } from "zod";
import { startField, wholeNumberField } from "./validate";

export const MAX_PAGE_SIZE = 1000;

/**
 * start/count of a list input, with the defaults and limits of docs/api.md "Conventions": spread into an operation's
 * input contract (`z.object({ ...pageFields, query: ... })`).
 */
export const pageFields = {
  start: startField(),
  count: wholeNumberField(0, MAX_PAGE_SIZE, 20),
};

/** A list operation's arguments: `input` with start and count, and what else the operation filters by. */
export const pageInput = <F extends z.ZodRawShape>(filters: F) =>
  z.object({ input: z.object({ ...pageFields, ...filters }) });
