/** The platform privileges of the contract. */
export const PRIVILEGES = [
  "GENERATE_PERSONAL_ACCESS_TOKENS",
  "MANAGE_ACCESS_TOKENS",
  "MANAGE_POLICIES",
  "TRUNCATE_TIMESERIES_INDEX",
  "GET_TIMESERIES_INDEX_SIZES",
  "GET_TASK_STATUS",
  "MANAGE_TESTS",
  "VIEW_TESTS",
  "INGEST_METADATA",
  "MANAGE_SYSTEM_OPERATIONS",
] as const;

export type Privilege = (typeof PRIVILEGES)[number];

/** A privilege also grants the ones listed here. */
const IMPLIES: Partial<Record<Privilege, Privilege[]>> = {
  MANAGE_ACCESS_TOKENS: ["GENERATE_PERSONAL_ACCESS_TOKENS"],
  MANAGE_SYSTEM_OPERATIONS: ["TRUNCATE_TIMESERIES_INDEX", "GET_TIMESERIES_INDEX_SIZES", "GET_TASK_STATUS"],
  MANAGE_TESTS: ["VIEW_TESTS"],
};

export function isPrivilege(value: string): value is Privilege {
  return (PRIVILEGES as readonly string[]).includes(value);
}

/** The granted privileges with everything they imply. */
export function withImplied(granted: Iterable<string>): Set<Privilege> {
  const result = new Set<Privilege>();
  for (const name of granted) {
    if (!isPrivilege(name)) continue;
    result.add(name);
    for (const implied of IMPLIES[name] ?? []) result.add(implied);
  }
  return result;
}
