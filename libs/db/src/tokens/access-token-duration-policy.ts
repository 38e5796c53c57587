import { Prisma } from "../generated/prisma/client";

/** ACCESS_TOKEN_ALLOWED_DURATIONS and ACCESS_TOKEN_ALLOW_NO_EXPIRY: the lifetimes a token may have. */
export interface DurationPolicy {
  allowedSeconds: readonly number[];
  allowNoExpiry: boolean;
}

/**
 * Whether a row's lifetime is one the policy allows: a token expires a whole number of seconds after the second it
 * was created in (createAccessToken), so its lifetime is exact; one that never expires only with allowNoExpiry. A
 * rotated-out token's expiry is the end of its grace window (at most a day): its successor is what the policy judges.
 */
export function withinPolicy(policy: DurationPolicy): Prisma.Sql {
  return Prisma.sql`(CASE WHEN rotated_at IS NOT NULL THEN true WHEN expires_at IS NULL THEN ${policy.allowNoExpiry}::boolean
      ELSE round(date_part('epoch', expires_at - date_trunc('second', created_at)))::int8
           = ANY(${[...policy.allowedSeconds]}::int8[]) END)`;
}
