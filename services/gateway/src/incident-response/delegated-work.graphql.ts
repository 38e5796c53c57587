import { needs, resolver } from "../graphql/resolver";
import { delegatedWorkArgs, revokeActorAccessArgs } from "./delegated-work.service";

export const delegatedWorkTypeDefs = /* GraphQL */ `
  "What a user, or one of its tokens, set in motion that acts for it without it being there."
  enum DelegatedWorkKind {
    "a scheduled test it owns (whoever last set its definition or schedule)"
    SCHEDULED_TEST
    "a retention policy it owns (whoever last created, changed or resumed it)"
    RETENTION_POLICY
    "a truncation or test-run task it created"
    TASK
    "an access token it minted (by tokenId: a token minted with that token)"
    ACCESS_TOKEN
  }

  type DelegatedWork {
    kind: DelegatedWorkKind!
    urn: String!
    "whom it acts for: a schedule's owner, a task's creator, a token's minter"
    ownerUrn: String!
    "the access token it was set through: a schedule's last edit, a task's creation, a token's parent; null: none"
    viaTokenId: String
    """
    A schedule: ACTIVE, INACTIVE (a test's state) or SUSPENDED; a task: its state as getTaskStatus shows it
    (waiting, active, completed, failed, cancelled); a token: LIVE, EXPIRED or REVOKED.
    """
    state: String!
    "when a schedule was suspended (epoch ms)"
    suspendedAt: Long
    suspendedReason: String
    "a task asked to stop (it ends at its worker's next checkpoint); null for anything else"
    cancelRequested: Boolean
  }

  input DelegatedWorkInput {
    "the work of this user (its schedules, its tasks, the tokens it minted)"
    ownerUrn: String
    "the work set through this access token (schedules last set, tasks created, tokens minted with it)"
    tokenId: String
    "1 to 1000: schedules first, then tasks and tokens newest first"
    limit: Int = 100
  }

  input RevokeActorAccessInput {
    "the user whose access ends"
    actorUrn: String!
    """
    also suspend the schedules it owns and ask the tasks it created that are waiting or running to stop (the work set
    through the tokens it revokes is suspended either way, as by every revocation)
    """
    suspendWork: Boolean = true
    "why, up to 256 characters: kept in the audit rows and the suspensions' reason"
    reason: String
  }

  type RevokeActorAccessResult {
    "the ids of the tokens revoked (every live token acting for the user)"
    revokedTokenIds: [String!]!
    "the schedules suspended and the tasks asked to stop (at most 1000 tasks listed; all are asked)"
    suspendedWork: [DelegatedWork!]!
  }

  extend type Query {
    """
    What a user or an access token set in motion: at least one of ownerUrn and tokenId (both: what matches both).
    Your own (your urn, a token acting for you or minted by you) with GENERATE_PERSONAL_ACCESS_TOKENS; anyone else's
    needs MANAGE_ACCESS_TOKENS.
    """
    delegatedWork("ownerUrn, tokenId, or both." input: DelegatedWorkInput!): [DelegatedWork!]!
  }

  extend type Mutation {
    """
    Incident response: revokes every live token acting for the user (as revokeAccessTokens, refused on every replica
    within 1 s) and, with suspendWork (the default), suspends the schedules it owns and asks its waiting and running
    tasks to stop, in one transaction, audited. The user itself may; anyone else needs MANAGE_ACCESS_TOKENS. The root
    user and the system actor: only the root user itself and the system client. A suspended schedule runs again once a
    holder of what it needs resumes it (resumeTestSchedule, resumeRetentionPolicy).
    """
    revokeActorAccess(
      "The user's urn, and whether to suspend its work (suspendWork, default true)."
      input: RevokeActorAccessInput!
    ): RevokeActorAccessResult!
  }
`;

/**
 * Both declare their privilege and contract here; revokeActorAccess's service also checks MANAGE_ACCESS_TOKENS when
 * the access it ends is another user's, which only its input tells.
 */
export const delegatedWorkResolvers = {
  Query: {
    delegatedWork: resolver(
      { requires: needs("GENERATE_PERSONAL_ACCESS_TOKENS", "list delegated work"), args: delegatedWorkArgs },
      (s, actor, args) => s.delegatedWork.list(actor, args),
    ),
  },
  Mutation: {
    revokeActorAccess: resolver(
      { requires: needs("GENERATE_PERSONAL_ACCESS_TOKENS", "revoke access tokens"), args: revokeActorAccessArgs },
      (s, actor, args) => s.delegatedWork.revokeActorAccess(actor, args),
    ),
  },
};
