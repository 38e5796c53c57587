import type { Policy } from "@mdp/db";
import { needs, resolver } from "../graphql/resolver";
import { listAuditEventsArgs } from "../audit/audit.service";
import { groupMembersArgs, listGroupsArgs } from "./group.service";
import { createPolicyArgs, listPoliciesArgs, policyArgs, updatePolicyArgs } from "./policy.service";

export const policyTypeDefs = /* GraphQL */ `
  enum PolicyType {
    PLATFORM
    METADATA
  }

  enum PolicyState {
    ACTIVE
    INACTIVE
  }

  input ActorFilterInput {
    users: [String!]
    groups: [String!]
    allUsers: Boolean
  }

  input PolicyUpdateInput {
    type: PolicyType = PLATFORM
    name: String!
    description: String
    state: PolicyState!
    "Platform privileges, e.g. GENERATE_PERSONAL_ACCESS_TOKENS, MANAGE_ACCESS_TOKENS."
    privileges: [String!]!
    actors: ActorFilterInput!
  }

  type ActorFilter {
    users: [String!]!
    groups: [String!]!
    allUsers: Boolean!
  }

  type Policy {
    urn: String!
    type: PolicyType!
    name: String!
    description: String
    state: PolicyState!
    privileges: [String!]!
    actors: ActorFilter!
    "false for the built-in root policy"
    editable: Boolean!
  }

  input ListPoliciesInput {
    start: Int = 0
    count: Int = 20
    query: String
  }

  type ListPoliciesResult {
    start: Int!
    count: Int!
    total: Int!
    policies: [Policy!]!
  }

  input CreateGroupInput {
    "the group urn becomes urn:li:corpGroup:<id>; generated when absent"
    id: String
    name: String!
    description: String
  }

  input GroupMembersInput {
    groupUrn: String!
    userUrns: [String!]!
  }

  type CorpGroup {
    urn: String!
    name: String!
    description: String
    members: [String!]!
  }

  input ListGroupsInput {
    start: Int = 0
    count: Int = 20
    query: String
  }

  type ListGroupsResult {
    start: Int!
    count: Int!
    total: Int!
    groups: [CorpGroup!]!
  }

  type AuditEvent {
    id: String!
    actorUrn: String!
    "e.g. accessToken.create, timeseries.truncate, task.cancel, queue.clean (docs/audit.md lists them all)"
    action: String!
    targetUrn: String
    "JSON object"
    details: String!
    createdAt: Long!
  }

  input ListAuditEventsInput {
    start: Int = 0
    count: Int = 20
    "who acted (a corpuser urn)"
    actorUrn: String
    "an action name of docs/audit.md, e.g. timeseries.truncate"
    action: String
    "what it acted on (a urn; a task is urn:li:task:<taskId>)"
    targetUrn: String
    "epoch ms, inclusive"
    since: Long
    "epoch ms, exclusive"
    until: Long
  }

  type ListAuditEventsResult {
    start: Int!
    count: Int!
    total: Int!
    "newest first"
    events: [AuditEvent!]!
  }

  extend type Query {
    "A policy, or null when there is none. Needs MANAGE_POLICIES."
    policy("The policy's urn, urn:li:dataHubPolicy:<id>." urn: String!): Policy
    "Policies, the built-in root policy first, then oldest first; query matches name or description. Needs MANAGE_POLICIES."
    listPolicies(
      "The page (start, count) and an optional text to match."
      input: ListPoliciesInput!
    ): ListPoliciesResult!
    "Groups by name, each with its members; query matches name or description. Needs MANAGE_POLICIES."
    listGroups("The page (start, count) and an optional text to match." input: ListGroupsInput!): ListGroupsResult!
    """
    Audit rows of privileged writes, newest first, filtered by actor, action, target or time (docs/audit.md). Needs
    MANAGE_POLICIES.
    """
    listAuditEvents("The filters and page." input: ListAuditEventsInput!): ListAuditEventsResult!
  }

  extend type Mutation {
    "Returns the new policy's urn."
    createPolicy("The policy: name, state, privileges and whom it grants them to." input: PolicyUpdateInput!): String!
    """
    Replaces a policy's fields; in force on every gateway replica within a second. Returns its urn. The built-in root
    policy is not editable (FORBIDDEN). Needs MANAGE_POLICIES.
    """
    updatePolicy("The policy's urn." urn: String!, "Its new fields, all of them." input: PolicyUpdateInput!): String!
    """
    Deletes a policy, withdrawing what it granted on every gateway replica within a second. Returns its urn. The built-in
    root policy cannot be deleted (FORBIDDEN). Needs MANAGE_POLICIES.
    """
    deletePolicy("The policy's urn." urn: String!): String!
    "Returns the new group's urn."
    createGroup("The group: id (optional), name, description." input: CreateGroupInput!): String!
    "Adds users to a group; policies naming the group grant them its privileges. Needs MANAGE_POLICIES."
    addGroupMembers("The group's urn and the users' urns." input: GroupMembersInput!): Boolean!
    "Removes users from a group. Needs MANAGE_POLICIES."
    removeGroupMembers("The group's urn and the users' urns." input: GroupMembersInput!): Boolean!
  }
`;

export const policyResolvers = {
  Policy: {
    actors: (policy: Policy) => ({ users: policy.users, groups: policy.groups, allUsers: policy.allUsers }),
  },
  Query: {
    policy: resolver({ requires: needs("MANAGE_POLICIES", "view policies"), args: policyArgs }, (s, _actor, args) =>
      s.policies.get(args),
    ),
    listPolicies: resolver(
      { requires: needs("MANAGE_POLICIES", "list policies"), args: listPoliciesArgs },
      (s, _actor, args) => s.policies.list(args),
    ),
    listGroups: resolver(
      { requires: needs("MANAGE_POLICIES", "list groups"), args: listGroupsArgs },
      (s, _actor, args) => s.groups.list(args),
    ),
    listAuditEvents: resolver(
      { requires: needs("MANAGE_POLICIES", "read audit events"), args: listAuditEventsArgs },
      (s, _actor, args) => s.audit.list(args),
    ),
  },
  Mutation: {
    createPolicy: resolver(
      { requires: needs("MANAGE_POLICIES", "create policies"), args: createPolicyArgs },
      (s, actor, args) => s.policies.create(actor, args),
    ),
    updatePolicy: resolver(
      { requires: needs("MANAGE_POLICIES", "update policies"), args: updatePolicyArgs },
      (s, actor, args) => s.policies.update(actor, args),
    ),
    deletePolicy: resolver(
      { requires: needs("MANAGE_POLICIES", "delete policies"), args: policyArgs },
      (s, actor, args) => s.policies.delete(actor, args),
    ),
    createGroup: resolver(
      { requires: needs("MANAGE_POLICIES", "create groups"), args: (s) => s.groups.createArgs },
      (s, actor, args) => s.groups.create(actor, args),
    ),
    addGroupMembers: resolver(
      { requires: needs("MANAGE_POLICIES", "change group members"), args: groupMembersArgs },
      (s, actor, args) => s.groups.addMembers(actor, args),
    ),
    removeGroupMembers: resolver(
      { requires: needs("MANAGE_POLICIES", "change group members"), args: groupMembersArgs },
      (s, actor, args) => s.groups.removeMembers(actor, args),
    ),
  },
};
