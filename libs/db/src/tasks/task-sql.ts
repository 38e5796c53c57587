/** The task row's SQL shared by the lifecycle and the listing (not exported from the package). */

/** A TaskRow's columns, with whether an active task's lease has lapsed (by PostgreSQL's clock). */
export const COLUMNS = `id, type::text AS type, state::text AS state, request, dedup_key AS "dedupKey", progress, result,
  failed_reason AS "failedReason", attempts_made AS "attemptsMade", cancel_requested AS "cancelRequested",
  created_by AS "createdBy", created_via AS "createdVia", created_at AS "createdAt", started_at AS "startedAt", finished_at AS "finishedAt",
  lease_owner AS "leaseOwner", lease_expires_at AS "leaseExpiresAt", rows_per_second AS "rowsPerSecond",
  (state = 'active' AND (lease_expires_at IS NULL OR lease_expires_at <= clock_timestamp())) AS "leaseLapsed"`;

/** The lapsed-lease test in SQL, for guards. */
export const LAPSED = "(lease_expires_at IS NULL OR lease_expires_at <= clock_timestamp())";
