import { getGroupMembers } from "@mdp/db";
import type { GraphQLContext } from "../graphql/context";
import { corpUserOf } from "../shared/corp-user";
import type { RelationshipsPage } from "./web-app.service";
import { needs, resolver } from "../graphql/resolver";
import { listRolesArgs, listUsersArgs } from "./web-app.service";

/**
 * DataHub's types the web app's shell and settings pages select (datahub-graphql-core's app.graphql and entity.graphql,
 * the fields their documents name): me's corpUser, listUsers, listRoles, and the relationships between users, groups,
 * roles and policies those documents walk (appConfig and me's platformPrivileges: web-app-config.graphql.ts). Every field DataHub's schema gives
 * these types is here, so a document of any of its versions validates; what this service does not hold answers null,
 * false or empty (docs/datahub-clients.md says which).
 */
export const webAppTypeDefs = /* GraphQL */ `
  extend enum EntityType {
    CORP_GROUP
    DATAHUB_ROLE
    DATAHUB_POLICY
    DATAHUB_VIEW
  }

  "DataHub's Entity: what a relationship leads to (a user, a group, a role, a policy)."
  interface Entity {
    urn: String!
    type: EntityType!
    "Edges of DataHub's graph from or to this entity; only group membership is held here."
    relationships(input: RelationshipsInput!): EntityRelationshipsResult
  }

  enum RelationshipDirection {
    INCOMING
    OUTGOING
  }

  """
  Which edges of DataHub's graph: IsMemberOfGroup (and IsMemberOfNativeGroup) are a user's groups, or a group's
  members; any other type has none here. count at most 1000.
  """
  input RelationshipsInput {
    types: [String!]!
    direction: RelationshipDirection!
    start: Int
    count: Int
  }

  type EntityRelationship {
    type: String
    direction: RelationshipDirection!
    entity: Entity
    created: AuditStamp
  }

  "DataHub's AuditStamp: when, and by whom."
  type AuditStamp {
    time: Long!
    actor: String
  }

  type EntityRelationshipsResult {
    start: Int
    count: Int
    total: Int
    relationships: [EntityRelationship!]!
  }

  "DataHub's user status; null here (no user directory)."
  enum CorpUserStatus {
    ACTIVE
    SUSPENDED
  }

  extend type CorpUser implements Entity {
    "Whether DataHub's native sign-up made the user; false here (users sign in through DataHub's frontend)."
    isNativeUser: Boolean
    "null here: this service keeps no user directory."
    status: CorpUserStatus
    relationships(input: RelationshipsInput!): EntityRelationshipsResult
    "The user's settings in DataHub's web app; null here (none are held)."
    settings: CorpUserSettings
    "Deprecated in DataHub; null here."
    editableInfo: CorpUserEditableInfo
    "Always true: a user is whoever a urn names (no user directory is held)."
    exists: Boolean
  }

  "DataHub's custom property entry (null wherever it appears here)."
  type CustomPropertiesEntry {
    key: String!
    value: String
    associatedUrn: String!
  }

  extend type CorpUserInfo {
    active: Boolean
    departmentId: Long
    departmentName: String
    countryCode: String
    manager: CorpUser
    customProperties: [CustomPropertiesEntry!]
  }

  extend type CorpUserProperties {
    active: Boolean
    departmentId: Long
    departmentName: String
    countryCode: String
    manager: CorpUser
    customProperties: [CustomPropertiesEntry!]
  }

  extend type CorpUserEditableProperties {
    teams: [String!]
    skills: [String!]
    slack: String
    phone: String
    aboutMe: String
    persona: DataHubPersona
    platforms: [DataPlatform!]
  }

  type CorpUserEditableInfo {
    displayName: String
    title: String
    aboutMe: String
    teams: [String!]
    skills: [String!]
    pictureLink: String
  }

  "DataHub's persona; none are held here."
  type DataHubPersona {
    urn: String!
    type: EntityType!
  }

  "DataHub's data platform; none are held here."
  type DataPlatform {
    urn: String!
    type: EntityType!
    name: String!
  }

  type CorpUserSettings {
    appearance: CorpUserAppearanceSettings
    views: CorpUserViewsSettings
    homePage: CorpUserHomePageSettings
  }

  type CorpUserHomePageSettings {
    pageTemplate: DataHubPageTemplate
    dismissedAnnouncementUrns: [String]
  }

  "DataHub's home page template; none are held here."
  type DataHubPageTemplate {
    urn: String!
    type: EntityType!
  }

  type CorpUserAppearanceSettings {
    showSimplifiedHomepage: Boolean
    showThemeV2: Boolean
  }

  type CorpUserViewsSettings {
    defaultView: DataHubView
  }

  "DataHub's saved view; none are held here."
  type DataHubView {
    urn: String!
    type: EntityType!
    name: String!
  }

  type CorpGroupProperties {
    displayName: String
    description: String
    email: String
    slack: String
  }

  type CorpGroupEditableProperties {
    description: String
    slack: String
    email: String
    pictureLink: String
  }

  "Where an entity comes from (DataHub's Origin): NATIVE here."
  type Origin {
    type: String
    externalType: String
  }

  type CorpGroupInfo {
    displayName: String
    description: String
    email: String
  }

  extend type CorpGroup implements Entity {
    "Always CORP_GROUP."
    type: EntityType!
    "DataHub's group properties: displayName is the group's name."
    properties: CorpGroupProperties
    info: CorpGroupInfo
    "null here: a group's only properties are its name and description."
    editableProperties: CorpGroupEditableProperties
    origin: Origin
    "Always true for a group listed."
    exists: Boolean
    relationships(input: RelationshipsInput!): EntityRelationshipsResult
  }

  "DataHub's role; this service holds none (policies and groups grant privileges)."
  type DataHubRole implements Entity {
    urn: String!
    type: EntityType!
    name: String!
    description: String
    relationships(input: RelationshipsInput!): EntityRelationshipsResult
  }

  "DataHub's policy as an entity of its graph (this service's policies: listPolicies); none are reached here."
  type DataHubPolicy implements Entity {
    urn: String!
    type: EntityType!
    name: String
    relationships(input: RelationshipsInput!): EntityRelationshipsResult
  }

  input ListUsersInput {
    start: Int = 0
    "At most 1000."
    count: Int = 20
    "Part of the urn, any case (at most 256 characters)."
    query: String
  }

  type ListUsersResult {
    start: Int!
    count: Int!
    total: Int!
    "The users holding live personal access tokens (the owners the access-token page filters by), by urn."
    users: [CorpUser!]!
  }

  input ListRolesInput {
    start: Int = 0
    count: Int = 20
    query: String
  }

  type ListRolesResult {
    start: Int!
    count: Int!
    total: Int!
    "Always empty: no roles are held here."
    roles: [DataHubRole!]!
  }

  extend type Me {
    "DataHub's AuthenticatedUser.corpUser: the caller as a CorpUser (no profile is held here)."
    corpUser: CorpUser!
  }

  extend type Query {
    "DataHub's listUsers: the users holding live personal access tokens. Needs MANAGE_ACCESS_TOKENS."
    listUsers("The page (start, count) and an optional text to match." input: ListUsersInput!): ListUsersResult
    "DataHub's listRoles: always empty (no roles are held here). Any authenticated caller."
    listRoles("The page, as DataHub sends it." input: ListRolesInput!): ListRolesResult
  }
`;

/** A group as DataHub's CorpGroup: its name stands for its display name. */
interface GroupRow {
  urn: string;
  name: string;
  description: string | null;
  members?: string[];
  memberCount?: number;
}
const groupProfile = (g: GroupRow) => ({ displayName: g.name, description: g.description, email: null });
const noRelationships = (_: unknown, args: { input?: { start?: number | null } }): RelationshipsPage => ({
  start: args.input?.start ?? 0,
  count: 0,
  total: 0,
  relationships: [],
});

export const webAppResolvers = {
  Entity: {
    __resolveType: (entity: { __typename?: string }) => entity.__typename ?? "CorpGroup",
  },
  EntityRelationship: {
    entity: (edge: { entity: object }) => ({ __typename: "CorpGroup", ...edge.entity }),
  },
  CorpUser: {
    isNativeUser: () => false,
    exists: () => true,
    status: () => null,
    settings: () => null,
    relationships: (user: { urn: string }, args: unknown, ctx: GraphQLContext) =>
      ctx.services.webApp.userRelationships(ctx.actor, user.urn, args),
  },
  CorpGroup: {
    type: () => "CORP_GROUP",
    origin: () => ({ type: "NATIVE", externalType: null }),
    exists: () => true,
    properties: groupProfile,
    info: groupProfile,
    members: async (g: GroupRow, _args: unknown, ctx: GraphQLContext) =>
      g.members ?? getGroupMembers(ctx.services.prisma, g.urn),
    // The group's members are counted: DataHub's pages show how many, not who, on the documents served here.
    relationships: (g: GroupRow, args: { input: { types: string[]; direction: string; start?: number | null } }) => {
      const start = args.input.start ?? 0;
      const counted =
        args.input.direction === "INCOMING" && args.input.types.some((t) => t.startsWith("IsMemberOf"))
          ? (g.memberCount ?? g.members?.length ?? 0)
          : 0;
      return { start, count: 0, total: counted, relationships: [] };
    },
  },
  DataHubRole: { type: () => "DATAHUB_ROLE", relationships: noRelationships },
  DataHubPolicy: { type: () => "DATAHUB_POLICY", relationships: noRelationships },
  DataHubView: { type: () => "DATAHUB_VIEW" },
  Me: {
    corpUser: (me: { urn: string }) => corpUserOf(me.urn),
  },
  Query: {
    listUsers: resolver(
      { requires: needs("MANAGE_ACCESS_TOKENS", "list the users holding access tokens"), args: listUsersArgs },
      (s, _actor, args) => s.webApp.listUsers(args),
    ),
    listRoles: resolver({ requires: null, args: listRolesArgs }, (s, _actor, args) => s.webApp.listRoles(args)),
  },
};
