/**
 * The platform privileges of the contract: DataHub's names, without the "_PRIVILEGE" suffix DataHub gives its REST API
 * privileges (TRUNCATE_TIMESERIES_INDEX is DataHub's TRUNCATE_TIMESERIES_INDEX_PRIVILEGE); a policy may name them
 * either way (see canonicalPrivilege). Here rather than in the gateway because the workers check them too: a schedule
 * acts for a user whose privileges are read again at each firing (@mdp/db's loadGrants).
 */
export const PRIVILEGES = [
  "GENERATE_PERSONAL_ACCESS_TOKENS",
  "MANAGE_ACCESS_TOKENS",
  // DataHub's (Core v1.4): create, list, read and delete service accounts, and mint SERVICE_ACCOUNT tokens for them.
  "MANAGE_SERVICE_ACCOUNTS",
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
  // Writing one kind of an entity's metadata: DataHub's resource privileges, which a test's actions need (each action
  // type names one; INGEST_METADATA implies them all, as it may write any aspect).
  "EDIT_ENTITY_TAGS",
  "EDIT_ENTITY_GLOSSARY_TERMS",
  "EDIT_ENTITY_OWNERS",
  "EDIT_ENTITY_DOMAINS",
  "EDIT_ENTITY_DEPRECATION",
] as const;

export type Privilege = (typeof PRIVILEGES)[number];

/**
 * What each kind of scheduled work needs of its owner at every firing, besides what a test's actions write: the
 * privilege of the operation a firing stands for (runTest, runRetentionPolicy). One table: the gateway requires it to
 * set and resume the work, the workers check the owner's current privileges against it at each firing.
 */
export const SCHEDULE_PRIVILEGES = {
  SCHEDULED_TEST: "MANAGE_TESTS",
  RETENTION_POLICY: "MANAGE_SYSTEM_OPERATIONS",
} as const satisfies Record<string, Privilege>;

/** A privilege also grants the ones listed here. */
const IMPLIES: Partial<Record<Privilege, Privilege[]>> = {
  MANAGE_ACCESS_TOKENS: ["GENERATE_PERSONAL_ACCESS_TOKENS"],
  MANAGE_SYSTEM_OPERATIONS: ["TRUNCATE_TIMESERIES_INDEX", "GET_TIMESERIES_INDEX_SIZES", "GET_TASK_STATUS"],
  MANAGE_TESTS: ["VIEW_TESTS"],
  INGEST_METADATA: [
    "EDIT_ENTITY_TAGS",
    "EDIT_ENTITY_GLOSSARY_TERMS",
    "EDIT_ENTITY_OWNERS",
    "EDIT_ENTITY_DOMAINS",
    "EDIT_ENTITY_DEPRECATION",
  ],
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
