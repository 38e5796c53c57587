import type { z } from "zod";
import { badInput, refuseUnstorable } from "@mdp/core";

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
