import type { GraphQLContext } from "../graphql/context";
import { APP_CONFIG } from "./web-app.service";

/**
 * What DataHub's web app reads at start (datahub-graphql-core's app.graphql): appConfig, which features are on, and
 * me's platformPrivileges, what the caller may do. Every field DataHub's schema gives these types is here, so a document
 * of any of its versions validates; what this service does not serve answers false (docs/datahub-clients.md).
 */
export const webAppConfigTypeDefs = /* GraphQL */ `
  """
  DataHub's PlatformPrivileges of the caller's request (what its token may use now, as me.privileges):
  generatePersonalAccessTokens, manageTokens (MANAGE_ACCESS_TOKENS), manageServiceAccounts, managePolicies,
  manageIdentities (MANAGE_POLICIES: groups), viewTests and manageTests answer from this service's privileges; the
  others are DataHub features not served here and always false.
  """
  type PlatformPrivileges {
    viewAnalytics: Boolean!
    managePolicies: Boolean!
    manageIdentities: Boolean!
    generatePersonalAccessTokens: Boolean!
    createDomains: Boolean!
    manageDomains: Boolean!
    manageIngestion: Boolean!
    manageSecrets: Boolean!
    manageTokens: Boolean!
    manageServiceAccounts: Boolean!
    viewTests: Boolean!
    manageTests: Boolean!
    manageGlossaries: Boolean!
    manageUserCredentials: Boolean!
    createTags: Boolean!
    manageTags: Boolean!
    manageGlobalViews: Boolean!
    manageOwnershipTypes: Boolean!
    manageGlobalAnnouncements: Boolean!
    manageGlobalSettings: Boolean!
    createBusinessAttributes: Boolean!
    manageBusinessAttributes: Boolean!
    manageStructuredProperties: Boolean!
    viewStructuredPropertiesPage: Boolean!
    viewMetadataProposals: Boolean!
    manageDocuments: Boolean!
    viewManageTags: Boolean!
    manageApplications: Boolean!
    manageFeatures: Boolean!
    manageHomePageTemplates: Boolean!
  }

  extend type Me {
    platformPrivileges: PlatformPrivileges!
  }

  "DataHub's AppConfig: what the web app reads at start to know which features are on."
  type AppConfig {
    appVersion: String
    authConfig: AuthConfig!
    analyticsConfig: AnalyticsConfig!
    policiesConfig: PoliciesConfig!
    identityManagementConfig: IdentityManagementConfig!
    managedIngestionConfig: ManagedIngestionConfig!
    lineageConfig: LineageConfig!
    visualConfig: VisualConfig!
    telemetryConfig: TelemetryConfig!
    testsConfig: TestsConfig!
    viewsConfig: ViewsConfig!
    searchBarConfig: SearchBarConfig!
    searchCardConfig: SearchCardConfig!
    searchFlagsConfig: SearchFlagsConfig!
    homePageConfig: HomePageConfig!
    featureFlags: FeatureFlagsConfig!
    chromeExtensionConfig: ChromeExtensionConfig!
  }

  type AuthConfig {
    "Always true: access tokens are this service's core."
    tokenAuthEnabled: Boolean!
  }

  type AnalyticsConfig {
    enabled: Boolean!
  }

  type Privilege {
    type: String!
    displayName: String
    description: String
  }

  type ResourcePrivileges {
    resourceType: String!
    resourceTypeDisplayName: String
    entityType: EntityType
    privileges: [Privilege!]!
  }

  type PoliciesConfig {
    enabled: Boolean!
    "This service's platform privileges (docs/limits.md, Authorization)."
    platformPrivileges: [Privilege!]!
    resourcePrivileges: [ResourcePrivileges!]!
  }

  type IdentityManagementConfig {
    enabled: Boolean!
  }

  type ManagedIngestionConfig {
    enabled: Boolean!
  }

  type LineageConfig {
    supportsImpactAnalysis: Boolean!
  }

  type QueriesTabConfig {
    queriesTabResultSize: Int
  }

  type EntityProfileConfig {
    defaultTab: String
  }

  type EntityProfilesConfig {
    domain: EntityProfileConfig
  }

  type SearchResultsVisualConfig {
    enableNameHighlight: Boolean
  }

  type ThemeConfig {
    themeId: String
  }

  type ApplicationConfig {
    showSidebarSectionWhenEmpty: Boolean
    showApplicationInNavigation: Boolean
  }

  type VisualConfig {
    logoUrl: String
    faviconUrl: String
    appTitle: String
    hideGlossary: Boolean
    showFullTitleInLineage: Boolean
    queriesTab: QueriesTabConfig
    entityProfiles: EntityProfilesConfig
    searchResult: SearchResultsVisualConfig
    theme: ThemeConfig
    application: ApplicationConfig
  }

  type TelemetryConfig {
    enableThirdPartyLogging: Boolean
  }

  type TestsConfig {
    enabled: Boolean!
  }

  type ViewsConfig {
    enabled: Boolean!
  }

  type SearchBarConfig {
    apiVariant: String
  }

  type SearchCardConfig {
    showDescription: Boolean
  }

  type SearchFlagsConfig {
    defaultSkipHighlighting: Boolean
  }

  type HomePageConfig {
    firstInPersonalSidebar: String
  }

  type ChromeExtensionConfig {
    enabled: Boolean!
    lineageEnabled: Boolean!
  }

  "DataHub's feature flags; themeV2Enabled, themeV2Default and showNavBarRedesign are true, every other false."
  type FeatureFlagsConfig {
    readOnlyModeEnabled: Boolean!
    showSearchFiltersV2: Boolean!
    showBrowseV2: Boolean!
    platformBrowseV2: Boolean!
    lineageGraphV2: Boolean!
    lineageGraphV3: Boolean!
    showAcrylInfo: Boolean!
    erModelRelationshipFeatureEnabled: Boolean!
    showAccessManagement: Boolean!
    nestedDomainsEnabled: Boolean!
    businessAttributeEntityEnabled: Boolean!
    dataContractsEnabled: Boolean!
    editableDatasetNameEnabled: Boolean!
    themeV2Enabled: Boolean!
    themeV2Default: Boolean!
    themeV2Toggleable: Boolean!
    schemaFieldCLLEnabled: Boolean!
    showSeparateSiblings: Boolean!
    showManageStructuredProperties: Boolean!
    hideDbtSourceInLineage: Boolean!
    schemaFieldLineageIgnoreStatus: Boolean!
    showNavBarRedesign: Boolean!
    showAutoCompleteResults: Boolean!
    entityVersioningEnabled: Boolean!
    showHasSiblingsFilter: Boolean!
    showSearchBarAutocompleteRedesign: Boolean!
    showManageTags: Boolean!
    showIntroducePage: Boolean!
    showIngestionPageRedesign: Boolean!
    showLineageExpandMore: Boolean!
    showStatsTabRedesign: Boolean!
    showHomePageRedesign: Boolean!
    showDefaultExternalLinks: Boolean!
    showProductUpdates: Boolean!
    logicalModelsEnabled: Boolean!
    showHomepageUserRole: Boolean!
    assetSummaryPageV1: Boolean!
    documentationFileUploadV1: Boolean!
  }

  extend type Query {
    "DataHub's appConfig: which features the web app should show. Any authenticated caller."
    appConfig: AppConfig
  }
`;

/** A field of a fixed answer that the answer leaves out reads false (feature flags, platform privileges). */
const falseUnlessSet = (known: Readonly<Record<string, boolean>>) =>
  new Proxy(known, { get: (target, field) => (typeof field === "string" && field in target ? target[field] : false) });

export const webAppConfigResolvers = {
  Me: {
    platformPrivileges: async (_me: unknown, _args: unknown, ctx: GraphQLContext) =>
      falseUnlessSet(await ctx.services.webApp.platformPrivileges(ctx.actor)),
  },
  AppConfig: {
    featureFlags: () => falseUnlessSet(APP_CONFIG.featureFlags),
  },
  Query: {
    // Any authenticated caller, as DataHub's: it says which features are on, nothing about the caller or the data.
    appConfig: () => APP_CONFIG,
  },
};
