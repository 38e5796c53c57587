import { needs, resolver } from "../graphql/resolver";
import { createServiceAccountArgs, listServiceAccountsArgs, serviceAccountArgs } from "./service-account.service";

/**
 * DataHub's service accounts (Core v1.4), as its clients call them: the operations, inputs and fields of DataHub's
 * service-accounts feature guide and smoke tests (docs/datahub-clients.md says which shapes are inferred).
 */
export const serviceAccountTypeDefs = /* GraphQL */ `
  """
  A service account: a non-human user, urn:li:corpuser:service_<uuid>. Policies grant it privileges like any user
  (name its urn among a policy's users, or add it to a group); it acts through SERVICE_ACCOUNT tokens, minted for it
  by holders of MANAGE_SERVICE_ACCOUNTS (createAccessToken with type SERVICE_ACCOUNT).
  """
  type ServiceAccount {
    urn: String!
    "Always CORP_USER: a service account is a user."
    type: EntityType!
    "The username of its urn: service_<uuid>."
    name: String!
    "As given at creation (at most 256 characters); null when none was."
    displayName: String
    description: String
    "Who created it."
    createdBy: String!
    "When it was created (epoch ms)."
    createdAt: Long!
    "When it last changed (epoch ms)."
    updatedAt: Long
    """
    When any of its live tokens was last used (epoch ms, within a few seconds of the use; this service's extension);
    null when none was, or it has no live token.
    """
    lastUsedAt: Long
  }

  input CreateServiceAccountInput {
    "A name to show (trimmed, at most 256 characters); the account's urn and name are generated."
    displayName: String
    "At most 2000 characters."
    description: String
  }

  input ListServiceAccountsInput {
    start: Int = 0
    "At most 1000."
    count: Int = 20
    "Matches accounts whose display name, name or description contains it, in any case (at most 256 characters)."
    query: String
  }

  type ListServiceAccountsResult {
    start: Int!
    count: Int!
    total: Int!
    "Live accounts, newest first."
    serviceAccounts: [ServiceAccount!]!
  }

  extend type Query {
    "Live service accounts. Needs MANAGE_SERVICE_ACCOUNTS."
    listServiceAccounts(
      "The page (start, count) and an optional text to match."
      input: ListServiceAccountsInput!
    ): ListServiceAccountsResult!
    "The live service account of that urn, or null. Needs MANAGE_SERVICE_ACCOUNTS."
    getServiceAccount("The account's urn, urn:li:corpuser:service_<uuid>." urn: String!): ServiceAccount
  }

  extend type Mutation {
    """
    Creates a service account (at most MAX_SERVICE_ACCOUNTS live ones: CONFLICT past it), audited. Needs
    MANAGE_SERVICE_ACCOUNTS.
    """
    createServiceAccount("An optional display name and description." input: CreateServiceAccountInput!): ServiceAccount!
    """
    Deletes a service account: every token of it is revoked at once, refused on every gateway replica within 1 s, and
    the work it owns is suspended (its schedules; its waiting and running tasks asked to stop), in one transaction,
    audited. Its urn never names a user again. true once done; NOT_FOUND for an account that is not live. Needs
    MANAGE_SERVICE_ACCOUNTS.
    """
    deleteServiceAccount("The account's urn." urn: String!): Boolean!
  }
`;

const managing = (to: string) => needs("MANAGE_SERVICE_ACCOUNTS", to);

export const serviceAccountResolvers = {
  Query: {
    listServiceAccounts: resolver(
      { requires: managing("list service accounts"), args: listServiceAccountsArgs },
      (s, _actor, args) => s.serviceAccounts.list(args),
    ),
    getServiceAccount: resolver(
      { requires: managing("read service accounts"), args: serviceAccountArgs },
      (s, _actor, args) => s.serviceAccounts.get(args),
    ),
  },
  Mutation: {
    createServiceAccount: resolver(
      { requires: managing("create service accounts"), args: createServiceAccountArgs },
      (s, actor, args) => s.serviceAccounts.create(actor, args),
    ),
    deleteServiceAccount: resolver(
      { requires: managing("delete service accounts"), args: serviceAccountArgs },
      (s, actor, args) => s.serviceAccounts.delete(actor, args),
    ),
  },
};
