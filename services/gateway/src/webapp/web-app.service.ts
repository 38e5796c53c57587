import { z } from "zod";
import { PRIVILEGES, type Privilege } from "@mdp/core";
import { accessTokenOwnerPage, groupsOfUser, type Database, type PrismaClient } from "@mdp/db";
import type { Actor } from "../auth/actor";
import { pageInput } from "../shared/paging";
import { parseArgs, textField } from "../shared/validate";
import type { PolicyEngine } from "../policies/policy-engine";
import { corpUserOf } from "../shared/corp-user";

/**
 * What DataHub's web app asks of GMS before and around its settings pages (the shell's appConfig and getMe, the
 * access-token page's owner list, the service-account page's roles), answered from what this service holds: its
 * privileges, groups and tokens. Nothing here is a DataHub feature of its own (no user profiles, no roles, no search):
 * where DataHub would read one, the answer says it is off or empty (docs/datahub-clients.md).
 */

/** Each privilege as DataHub's policy builder lists one: its type, a display name and a description. */
const PRIVILEGE_TEXTS: Readonly<Record<Privilege, [string, string]>> = {
  GENERATE_PERSONAL_ACCESS_TOKENS: ["Generate Personal Access Tokens", "Create, list and revoke your own tokens."],
  MANAGE_ACCESS_TOKENS: ["Manage All Access Tokens", "Create, list and revoke the tokens of any user."],
  MANAGE_SERVICE_ACCOUNTS: ["Manage Service Accounts", "Create and delete service accounts, and mint their tokens."],
  MANAGE_POLICIES: ["Manage Policies", "Create and change platform policies and groups; read the audit trail."],
  TRUNCATE_TIMESERIES_INDEX: ["Truncate Timeseries Index", "Delete time-series rows older than a time."],
  GET_TIMESERIES_INDEX_SIZES: ["Get Timeseries Index Sizes", "Read the sizes of the time-series aspects."],
  GET_TASK_STATUS: ["Get Task Status", "Read the status of every background task."],
  MANAGE_TESTS: ["Manage Tests", "Create, change, run and delete metadata tests."],
  VIEW_TESTS: ["View Tests", "Read metadata tests and their results."],
  INGEST_METADATA: ["Ingest Metadata", "Write any aspect of any entity."],
  MANAGE_SYSTEM_OPERATIONS: ["Manage System Operations", "Truncations, retention policies, the queue dashboard."],
  GET_ENTITY: ["Get Entity", "Read the aspects of entities."],
  GET_TIMESERIES_ASPECT: ["Get Timeseries Aspect", "Read the time-series rows of entities."],
  EDIT_ENTITY_TAGS: ["Edit Tags", "Add and remove the tags of entities."],
  EDIT_ENTITY_GLOSSARY_TERMS: ["Edit Glossary Terms", "Add and remove the glossary terms of entities."],
  EDIT_ENTITY_OWNERS: ["Edit Owners", "Add and remove the owners of entities."],
  EDIT_ENTITY_DOMAINS: ["Edit Domain", "Set and unset the domain of entities."],
  EDIT_ENTITY_DEPRECATION: ["Edit Deprecation", "Deprecate and undeprecate entities."],
};

/**
 * DataHub's AppConfig as this service's features are: tokens on (authConfig.tokenAuthEnabled), policies and groups
 * (policiesConfig, identityManagementConfig, which the service-account page is under) and metadata tests on; what it
 * does not serve (analytics, lineage, UI ingestion, views, search, the Chrome extension) off. The feature flags keep
 * DataHub's own defaults where the web app's settings pages depend on them (its V2 theme, whose settings hold the
 * access-token and service-account pages) and are off otherwise.
 */
export const APP_CONFIG = {
  appVersion: null,
  authConfig: { tokenAuthEnabled: true },
  analyticsConfig: { enabled: false },
  policiesConfig: {
    enabled: true,
    platformPrivileges: PRIVILEGES.map((type) => ({
      type,
      displayName: PRIVILEGE_TEXTS[type][0],
      description: PRIVILEGE_TEXTS[type][1],
    })),
    resourcePrivileges: [],
  },
  identityManagementConfig: { enabled: true },
  managedIngestionConfig: { enabled: false },
  lineageConfig: { supportsImpactAnalysis: false },
  visualConfig: {
    logoUrl: null,
    faviconUrl: null,
    appTitle: null,
    hideGlossary: false,
    showFullTitleInLineage: false,
    queriesTab: { queriesTabResultSize: 5 },
    entityProfiles: { domain: { defaultTab: null } },
    searchResult: { enableNameHighlight: false },
    theme: { themeId: null },
    application: { showSidebarSectionWhenEmpty: false, showApplicationInNavigation: false },
  },
  telemetryConfig: { enableThirdPartyLogging: false },
  testsConfig: { enabled: true },
  viewsConfig: { enabled: false },
  searchBarConfig: { apiVariant: "SEARCH_ACROSS_ENTITIES" },
  searchCardConfig: { showDescription: false },
  searchFlagsConfig: { defaultSkipHighlighting: false },
  homePageConfig: { firstInPersonalSidebar: "YOUR_ASSETS" },
  chromeExtensionConfig: { enabled: false, lineageEnabled: false },
  // Flags not named here answer false (web-app.graphql.ts).
  featureFlags: { themeV2Enabled: true, themeV2Default: true, showNavBarRedesign: true },
} as const;

/** PlatformPrivileges: each of DataHub's booleans from the privilege of this service that stands for it. */
const PLATFORM_PRIVILEGES: Readonly<Record<string, Privilege>> = {
  generatePersonalAccessTokens: "GENERATE_PERSONAL_ACCESS_TOKENS",
  manageTokens: "MANAGE_ACCESS_TOKENS",
  manageServiceAccounts: "MANAGE_SERVICE_ACCOUNTS",
  managePolicies: "MANAGE_POLICIES",
  // DataHub's users & groups: here the groups, which MANAGE_POLICIES changes.
  manageIdentities: "MANAGE_POLICIES",
  viewTests: "VIEW_TESTS",
  manageTests: "MANAGE_TESTS",
};

/** Every PlatformPrivileges field this service answers true for some caller; the others are always false. */
export const PLATFORM_PRIVILEGE_FIELDS = Object.keys(PLATFORM_PRIVILEGES);

/** Relationship types as DataHub names them (its graph's edge names). */
const MEMBER_OF_GROUP = ["IsMemberOfGroup", "IsMemberOfNativeGroup"];

/** DataHub's RelationshipsInput: which edges, which way, and a page of them. */
const relationshipsArgs = z.object({
  input: z.object({
    types: z.array(z.string().max(256)).max(32),
    direction: z.enum(["INCOMING", "OUTGOING"]),
    start: z.number().int().min(0).nullish(),
    count: z.number().int().min(0).max(1000).nullish(),
  }),
});
export const listUsersArgs = pageInput({ query: textField({ max: 256 }).nullish() });
/** listRoles' arguments (declared at its resolver, web-app.graphql.ts). */
export const listRolesArgs = pageInput({ query: textField({ max: 256 }).nullish() });

export interface RelationshipsPage {
  start: number;
  count: number;
  total: number;
  relationships: Array<{ type: string; direction: string; entity: unknown }>;
}

export class WebAppService {
  constructor(
    private readonly db: Pick<Database, "pool">,
    private readonly prisma: PrismaClient,
    private readonly engine: PolicyEngine,
  ) {}

  /** DataHub's PlatformPrivileges of the caller's request: what its token (chain and scopes) may use now. */
  async platformPrivileges(actor: Actor): Promise<Record<string, boolean>> {
    const held = await this.engine.privilegesOf(actor);
    return Object.fromEntries(Object.entries(PLATFORM_PRIVILEGES).map(([field, p]) => [field, held.has(p)]));
  }

  /**
   * A user's relationships as DataHub's graph names them. Groups are this service's (IsMemberOfGroup, OUTGOING: the
   * groups a user is in); roles (IsMemberOfRole) and every other edge are none: it holds no roles. A user's groups are
   * its own to read, and anyone's for MANAGE_POLICIES (who reads and changes every group).
   */
  async userRelationships(actor: Actor, userUrn: string, args: unknown): Promise<RelationshipsPage> {
    const { types, direction, start, count } = parseArgs(relationshipsArgs, args).input;
    const page = { start: start ?? 0, count: count ?? 20 };
    if (direction !== "OUTGOING" || !types.some((t) => MEMBER_OF_GROUP.includes(t))) return emptyPage(page.start);
    if (userUrn !== actor.urn && !(await this.engine.has(actor, "MANAGE_POLICIES"))) return emptyPage(page.start);
    const { total, rows } = await groupsOfUser(this.prisma, userUrn, page.start, page.count);
    return {
      start: page.start,
      count: rows.length,
      total,
      relationships: rows.map((g) => ({
        type: "IsMemberOfGroup",
        direction,
        entity: { ...g, members: undefined, memberCount: g.memberCount },
      })),
    };
  }

  /**
   * DataHub's listUsers, as the access-token page asks it for the owners it may filter by: the users holding live
   * personal access tokens (this service keeps no user directory), each as a CorpUser without a profile. Needs
   * MANAGE_ACCESS_TOKENS, as listing every user's tokens does: who holds tokens is what it tells.
   */
  async listUsers({ input: { start, count, query } }: z.output<typeof listUsersArgs>) {
    const { total, owners } = await accessTokenOwnerPage(this.db.pool, query?.trim() || undefined, start, count);
    return { start, count: owners.length, total, users: owners.map(corpUserOf) };
  }

  /** DataHub's listRoles: this service holds no roles (policies and groups grant privileges), so none, to anyone. */
  listRoles({ input: { start } }: z.output<typeof listRolesArgs>) {
    return { start, count: 0, total: 0, roles: [] };
  }
}

const emptyPage = (start: number): RelationshipsPage => ({ start, count: 0, total: 0, relationships: [] });
