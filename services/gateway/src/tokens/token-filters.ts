import { z } from "zod";
import { abbreviated, badInput, MAX_EPOCH_MS, parseUrnField } from "@mdp/core";
import { parsedBy } from "../shared/validate";

/**
 * listAccessTokens' `filters`: each a FacetFilterInput as DataHub's clients send it, parsed into the filter it means
 * (tokenFilterOf).
 */
export const tokenFilters = z
  .array(
    z
      .object({
        field: z.string(),
        value: z.string().nullish(),
        values: z.array(z.string()).nullish(),
        negated: z.boolean().nullish(),
        condition: z.string().nullish(),
      })
      .transform(parsedBy((at, filter: FacetFilterInput) => tokenFilterOf(filter, at))),
  )
  .nullish()
  .transform((filters) => filters ?? []);

/** listAccessTokens' FacetFilterInput, as DataHub's clients send it. */
export interface FacetFilterInput {
  field: string;
  value?: string | null;
  values?: string[] | null;
  negated?: boolean | null;
  condition?: string | null;
}

/** Fields matched by equality (EQUAL, the default), with negated; each is a column of access_token. */
export const EQUALITY_FIELDS = ["actorUrn", "ownerUrn", "name", "id"] as const;
/** Time fields compared with one epoch-ms value. */
export const TIME_FIELDS = ["expiresAt", "createdAt"] as const;
const COMPARISONS = {
  LESS_THAN: "<",
  LESS_THAN_OR_EQUAL_TO: "<=",
  GREATER_THAN: ">",
  GREATER_THAN_OR_EQUAL_TO: ">=",
} as const;

export type EqualityField = (typeof EQUALITY_FIELDS)[number];
export type TimeField = (typeof TIME_FIELDS)[number];
export type Comparison = (typeof COMPARISONS)[keyof typeof COMPARISONS];

/**
 * Tokens whose lifetime ACCESS_TOKEN_ALLOWED_DURATIONS (or, for a token that never expires,
 * ACCESS_TOKEN_ALLOW_NO_EXPIRY) does not allow now (`true`), or does (`false`): this service's extension.
 */
export const POLICY_FIELD = "outsideDurationPolicy";
/** Tokens neither used nor created in the last N days (lastUsedAt, or createdAt for one never used). */
export const UNUSED_FIELD = "unusedForDays";
/** The most days unusedForDays counts (a hundred years, as ACCESS_TOKEN_IDLE_REVOKE_DAYS). */
export const MAX_UNUSED_DAYS = 36_500;

/**
 * One filter of the list: any of `values` (none of them when negated), a time compared with `millis`, or whether the
 * token's lifetime is outside the current duration policy.
 */
export type TokenFilter =
  | { field: EqualityField; values: string[]; negated: boolean }
  | { field: TimeField; op: Comparison; millis: number }
  | { field: typeof POLICY_FIELD; outside: boolean }
  | { field: typeof UNUSED_FIELD; days: number };

const isOneOf = <T extends string>(list: readonly T[], value: string): value is T =>
  (list as readonly string[]).includes(value);

/**
 * A FacetFilterInput as the filter it means, or BAD_USER_INPUT naming it (`at`, e.g. `input.filters[0]`) and what it
 * may be: each field and condition has exactly one meaning, and anything else is refused rather than ignored.
 */
function tokenFilterOf(input: FacetFilterInput, at: string): TokenFilter {
  const { field } = input;
  // As in DataHub, `values` when it holds any, else `value`.
  const fromValues = Boolean(input.values?.length);
  const values = fromValues ? input.values! : input.value != null ? [input.value] : [];
  const valuePath = (j: number) => `${at}.${fromValues ? `values[${j}]` : "value"}`;
  if (values.length === 0) throw badInput(`${at} needs a value or values`);
  const condition = input.condition ?? "EQUAL";
  if (isOneOf(EQUALITY_FIELDS, field)) {
    if (condition !== "EQUAL") {
      throw badInput(`${at}.condition ${condition} is not accepted on ${field}: use EQUAL (the default), or negated`);
    }
    // A mistyped user ("alice") would otherwise list nothing, which reads as "alice has no tokens".
    if (field === "actorUrn" || field === "ownerUrn") {
      values.forEach((value, j) => parseUrnField(valuePath(j), value, "corpuser"));
    }
    return { field, values, negated: input.negated === true };
  }
  if (field === POLICY_FIELD) {
    if (condition !== "EQUAL" || input.negated) {
      throw badInput(`${at} on ${field} takes condition EQUAL (the default), not negated: value 'true' or 'false'`);
    }
    if (values.length !== 1 || (values[0] !== "true" && values[0] !== "false")) {
      throw badInput(`${at} on ${field} takes one value, 'true' or 'false'`);
    }
    return { field, outside: values[0] === "true" };
  }
  if (field === UNUSED_FIELD) {
    if (condition !== "EQUAL" || input.negated) {
      throw badInput(`${at} on ${field} takes condition EQUAL (the default), not negated: a number of days`);
    }
    const text = values.length === 1 ? values[0]! : "";
    const days = /^\d{1,6}$/.test(text) ? Number(text) : NaN;
    if (!(days >= 1 && days <= MAX_UNUSED_DAYS)) {
      throw badInput(`${valuePath(0)} on ${field} must be one whole number of days from 1 to ${MAX_UNUSED_DAYS}`);
    }
    return { field, days };
  }
  if (isOneOf(TIME_FIELDS, field)) {
    if (!Object.hasOwn(COMPARISONS, condition)) {
      throw badInput(`${at}.condition on ${field} must be one of ${Object.keys(COMPARISONS).join(", ")}`);
    }
    if (input.negated) throw badInput(`${at}.negated is not accepted on ${field}: use the opposite condition`);
    if (values.length !== 1) throw badInput(`${at} on ${field} takes one value (epoch milliseconds)`);
    const text = values[0]!;
    const millis = /^\d{1,16}$/.test(text) ? Number(text) : NaN;
    if (!(millis <= MAX_EPOCH_MS)) {
      throw badInput(`${valuePath(0)} '${abbreviated(text)}' must be a whole number of epoch milliseconds`);
    }
    return { field, op: COMPARISONS[condition as keyof typeof COMPARISONS], millis };
  }
  throw badInput(
    `${at}.field '${abbreviated(field)}' is not filterable; use one of ${[...EQUALITY_FIELDS, ...TIME_FIELDS, POLICY_FIELD, UNUSED_FIELD].join(", ")}`,
  );
}
