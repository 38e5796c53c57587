import { InvalidArgumentError, type Command } from "commander";
import { ApiClient } from "./client";
import { credentials } from "./config";
import type { MeQuery } from "./generated/graphql";
import { ME } from "./graphql-operations/me";
import type { GlobalOptions } from "./output";

/** The client of the stored login, or of MDP_URL/MDP_TOKEN. */
export function apiClient(): ApiClient {
  const { url, token } = credentials();
  return new ApiClient(url, token);
}

/** The global options (--json) as seen from a subcommand's action. */
export const globalsOf = (command: Command): GlobalOptions => command.optsWithGlobals<GlobalOptions>();

/** A commander parser for whole numbers within [min, max]; commander reports a refusal as a usage error (exit 1). */
export function wholeNumber(min: number, max: number) {
  return (value: string): number => {
    const n = Number(value);
    if (!/^\d+$/.test(value.trim()) || !Number.isSafeInteger(n) || n < min || n > max) {
      throw new InvalidArgumentError(`must be a whole number from ${min} to ${max}.`);
    }
    return n;
  };
}

/** The choices of each oneOf parser, for the shell completion (completion.ts) to offer. */
export const PARSER_CHOICES = new WeakMap<object, readonly string[]>();

/** A commander parser for one of `choices`, compared ignoring case. */
export function oneOf<T extends string>(choices: readonly T[]) {
  const parse = (value: string): T => {
    const found = choices.find((c) => c.toLowerCase() === value.toLowerCase());
    if (!found) throw new InvalidArgumentError(`must be one of ${choices.join(", ")}.`);
    return found;
  };
  PARSER_CHOICES.set(parse, choices);
  return parse;
}

/** `me` as a user urn: the caller's own. */
export async function resolveMe(client: ApiClient, urn: string | undefined): Promise<string | undefined> {
  if (urn !== "me") return urn;
  const { me } = await client.graphql<MeQuery>(ME);
  return me.urn;
}
