import { badInput } from "@mdp/core";

export const MAX_PAGE_SIZE = 1000;

/** start/count of a list input, with the defaults and limits of docs/api.md "Conventions". */
export function pageOf(input: { start?: number | null; count?: number | null }): { start: number; count: number } {
  const start = input.start ?? 0;
  const count = input.count ?? 20;
  if (start < 0) throw badInput("input.start must be 0 or more");
  if (count < 0 || count > MAX_PAGE_SIZE) throw badInput(`input.count must be between 0 and ${MAX_PAGE_SIZE}`);
  return { start, count };
}
