import { abbreviated, badInput } from "@mdp/core";

/**
 * The platform privileges of the contract: DataHub's names, without the "_PRIVILEGE" suffix DataHub gives its REST API
 * privileges (TRUNCATE_TIMESERIES_INDEX is DataHub's TRUNCATE_TIMESERIES_INDEX_PRIVILEGE); a policy may name them
 * either way (see canonicalPrivilege).
 */
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
  // Reading metadata: DataHub's GET_ENTITY_PRIVILEGE ("GET Entity API": GET /gms/entities/<urn>, every versioned
  // aspect, testResults included) and GET_TIMESERIES_ASPECT_PRIVILEGE (getTimeseriesAspectValues).
  "GET_ENTITY",
  "GET_TIMESERIES_ASPECT",
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

/** DataHub's spellings of privileges it names differently: GET_ES_TASK_STATUS_PRIVILEGE is our GET_TASK_STATUS. */
const DATAHUB_NAMES: Readonly<Record<string, Privilege>> = { GET_ES_TASK_STATUS_PRIVILEGE: "GET_TASK_STATUS" };
const SUFFIX = "_PRIVILEGE";

/**
 * The privilege a policy means by `name`: ours, or DataHub's spelling of it (GET_ENTITY_PRIVILEGE), so policies
 * written for DataHub work unchanged; undefined when it names none.
 */
export function canonicalPrivilege(name: string): Privilege | undefined {
  if (isPrivilege(name)) return name;
  if (Object.hasOwn(DATAHUB_NAMES, name)) return DATAHUB_NAMES[name];
  const stripped = name.endsWith(SUFFIX) ? name.slice(0, -SUFFIX.length) : undefined;
  return stripped !== undefined && isPrivilege(stripped) ? stripped : undefined;
}

/** The granted privileges with everything they imply. */
export function withImplied(granted: Iterable<string>): Set<Privilege> {
  const result = new Set<Privilege>();
  for (const name of granted) {
    const privilege = canonicalPrivilege(name);
    if (privilege === undefined) continue;
    result.add(privilege);
    for (const implied of IMPLIES[privilege] ?? []) result.add(implied);
  }
  return result;
}

/** The privileges `wanted` holds that `holder` does not (both with what they imply). */
export function privilegesMissing(holder: ReadonlySet<Privilege>, wanted: ReadonlySet<Privilege>): Privilege[] {
  return [...wanted].filter((p) => !holder.has(p));
}

/** The most privilege names one access token's `scopes` may list (DataHub spellings and repeats count). */
export const MAX_TOKEN_SCOPES = 32;

/**
 * An access token's requested scopes as privileges: each name ours or DataHub's spelling, at most MAX_TOKEN_SCOPES of
 * them, at least one (an empty list would read as "unscoped", the opposite of what a caller sending it means);
 * repeats and spellings of one privilege count once. 400 naming the field, the limit or the unknown name.
 */
export function parseScopes(field: string, names: readonly string[]): Privilege[] {
  if (names.length === 0) {
    throw badInput(`${field} must name at least one privilege; leave it out for a token with all of its actor's`);
  }
  if (names.length > MAX_TOKEN_SCOPES) {
    throw badInput(`${field} lists ${names.length} privileges; the limit is ${MAX_TOKEN_SCOPES}`);
  }
  const scopes = new Set<Privilege>();
  names.forEach((name, i) => {
    const privilege = canonicalPrivilege(name);
    if (privilege === undefined) {
      throw badInput(`${field}[${i}] '${abbreviated(name)}' is not a privilege; known: ${PRIVILEGES.join(", ")}`);
    }
    scopes.add(privilege);
  });
  return [...scopes].sort();
}

/**
 * What a scoped token may do: its scopes with what they imply, and of those only what its actor holds now (`held`,
 * read at each check, so a privilege the actor loses drops from every token it has). Unscoped (`undefined`): `held`.
 */
export function withinScopes(
  held: ReadonlySet<Privilege>,
  scopes: readonly Privilege[] | undefined,
): ReadonlySet<Privilege> {
  if (scopes === undefined) return held;
  return new Set([...withImplied(scopes)].filter((p) => held.has(p)));
}
