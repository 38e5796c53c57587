import { z } from "zod";
import { forbidden, makeUrn, type Config, type Logger } from "@mdp/core";
import {
  accessTokensMintedBy,
  disableWebhookSubscriptionsOf,
  disableWebhookSubscriptionsSetThroughTokensMintedBy,
  inPrismaTransaction,
  MAX_SUSPENDED_REASON,
  retentionPoliciesOwnedBy,
  scheduledTestsOwnedBy,
  suspendDeferredWorkOf,
  taskIdsCreatedBy,
  type Database,
  type Prisma,
} from "@mdp/db";
import { presentState, type TaskRow } from "@mdp/tasks";
import { recordAudit } from "../audit/audit.service";
import type { Actor } from "../auth/actor";
import type { TaskService } from "../operations/task.service";
import { taskUrn } from "../operations/task.service";
import { idField, said, textField, urnField, wholeNumberField } from "../shared/validate";
import type { PolicyEngine } from "../policies/policy-engine";
import { stopWorkSetThrough } from "../tokens/revoked-token-work";
import { requireMayEndPlatformAccess } from "../tokens/platform-principals";
import type { TokenStore } from "../tokens/token.store";
import type { TokenVerifier } from "../tokens/token.verifier";

export type DelegatedWorkKind = "SCHEDULED_TEST" | "RETENTION_POLICY" | "TASK" | "ACCESS_TOKEN";

/** One piece of work a user (or one of its tokens) set in motion, as delegatedWork and revokeActorAccess show it. */
export interface DelegatedWork {
  kind: DelegatedWorkKind;
  urn: string;
  /** whom it acts for: a schedule's owner, a task's creator, a token's minter */
  ownerUrn: string;
  /** the token it was set through: a schedule's last edit, a task's creation, the token a token was minted with */
  viaTokenId: string | null;
  /**
   * a schedule: ACTIVE, INACTIVE (a test's state) or SUSPENDED; a task: its state as getTaskStatus shows it; a token:
   * LIVE, EXPIRED or REVOKED
   */
  state: string;
  suspendedAt: number | null;
  suspendedReason: string | null;
  /** a task asked to stop (it ends at its worker's next checkpoint); null for anything else */
  cancelRequested: boolean | null;
}

/** delegatedWork's longest answer (docs/limits.md): schedules first, then tasks newest first, then tokens. */
export const MAX_DELEGATED_WORK = 1000;
export const DEFAULT_DELEGATED_WORK = 100;
/** revokeActorAccess's reason, as given */
export const MAX_REVOCATION_REASON = 256;

export const delegatedWorkArgs = z.object({
  input: z
    .object({
      limit: wholeNumberField(
        1,
        MAX_DELEGATED_WORK,
        DEFAULT_DELEGATED_WORK,
        (at) => `${at} must be a whole number from 1 to ${MAX_DELEGATED_WORK}`,
      ),
      ownerUrn: urnField("corpuser").nullish(),
      tokenId: idField().nullish(),
    })
    .refine(
      (input) => input.ownerUrn != null || input.tokenId != null,
      said((at) => `${at}: give ownerUrn, tokenId or both (the work of that user, or set through that token)`),
    ),
});

export const revokeActorAccessArgs = z.object({
  input: z.object({
    actorUrn: urnField("corpuser"),
    suspendWork: z
      .boolean()
      .nullish()
      .transform((suspendWork) => suspendWork ?? true),
    /** as given (trimmed), kept in the audit rows; the suspensions' reason says who revoked and this */
    reason: textField({ max: MAX_REVOCATION_REASON, trim: true })
      .nullish()
      .transform((reason) => reason ?? ""),
  }),
});

export interface DelegatedWorkServiceDeps {
  db: Database;
  engine: PolicyEngine;
  store: TokenStore;
  verifier: Pick<TokenVerifier, "revokedAllOf" | "revoked">;
  tasks: TaskService;
  config: Pick<Config, "URN_NAMESPACE" | "ROOT_USER_URN">;
  logger: Logger;
}

/**
 * Incident response (docs/authorization.md): what a user, or one of its tokens, set in motion — scheduled tests and retention
 * policies it owns (or last set through that token), tasks it created (or created through that token), tokens minted
 * with that token — and revoking a user's access with the work that would go on acting for it. A user may do either
 * for itself with GENERATE_PERSONAL_ACCESS_TOKENS; another user's, or a token that is not its own, needs
 * MANAGE_ACCESS_TOKENS (what revokeAccessTokens needs).
 */
export class DelegatedWorkService {
  private readonly db: Database;
  private readonly engine: PolicyEngine;
  private readonly store: TokenStore;
  private readonly verifier: DelegatedWorkServiceDeps["verifier"];
  private readonly tasks: TaskService;
  private readonly config: DelegatedWorkServiceDeps["config"];
  private readonly logger: Logger;

  constructor(deps: DelegatedWorkServiceDeps) {
    this.db = deps.db;
    this.engine = deps.engine;
    this.store = deps.store;
    this.verifier = deps.verifier;
    this.tasks = deps.tasks;
    this.config = deps.config;
    this.logger = deps.logger;
  }

  async list(
    actor: Actor,
    { input: { limit, ...input } }: z.output<typeof delegatedWorkArgs>,
  ): Promise<DelegatedWork[]> {
    const ownerUrn = input.ownerUrn ?? undefined;
    const tokenId = input.tokenId ?? undefined;
    await this.requireMayView(actor, ownerUrn, tokenId);
    return this.find({ ownerUrn, tokenId }, limit);
  }

  /**
   * revokeActorAccess: every live token acting for the user is revoked (as revokeAccessTokens), and with suspendWork
   * (the default) the schedules it owns are suspended and the tasks it created that are waiting or running are asked
   * to stop — in one transaction, each change with its audit row, plus `actor.revokeAccess` on the user. Then every
   * replica is told of the revocation, and the cancelled tasks still waiting are taken off their queues.
   */
  async revokeActorAccess(actor: Actor, { input }: z.output<typeof revokeActorAccessArgs>) {
    const { actorUrn: userUrn, reason: given, suspendWork } = input;
    if (userUrn !== actor.urn) {
      await this.engine.require(actor, "MANAGE_ACCESS_TOKENS", "revoke the access tokens of other users");
    }
    requireMayEndPlatformAccess(actor, userUrn, this.config.ROOT_USER_URN, "revoke the access of");
    const reason = `revokeActorAccess by ${actor.urn}${given ? `: ${given}` : ""}`.slice(0, MAX_SUSPENDED_REASON);
    return this.endAccessOf(actor, userUrn, { reason, given, suspendWork });
  }

  /**
   * revokeActorAccess's work, once the caller is authorized: `first`, when given, is the transaction's first step
   * (deleteServiceAccount's: the account's row, whose lock keeps a mint from slipping past the revocation).
   */
  async endAccessOf(
    actor: Actor,
    userUrn: string,
    how: { reason: string; given: string; suspendWork: boolean },
    first?: (tx: Prisma.TransactionClient) => Promise<void>,
  ) {
    const { reason, given, suspendWork } = how;
    const { revokedTokenIds, minted, tests, policies, tasks } = await inPrismaTransaction(
      this.db.prisma,
      async (tx) => {
        await first?.(tx);
        const own = await this.store.revokeAllOfIn(
          tx,
          userUrn,
          actor,
          first ? "serviceAccountDeleted" : "actorAccessRevoked",
        );
        // The service-account tokens the user minted: their secrets were handed to it (not so a deleted account's own).
        const minted = first ? [] : await this.store.revokeServiceAccountTokensMintedByIn(tx, userUrn, actor);
        const revoked = [...own, ...minted];
        // Its own deferred work, and (as for its webhooks below) what another user's work was set through a
        // service-account token it minted: whoever held the token chose what that work does.
        const suspended = suspendWork
          ? await this.suspendSchedulesOf(tx, actor, { ownerUrn: userUrn }, reason)
          : { tests: [], policies: [] };
        if (suspendWork && !first) {
          const viaMinted = await this.suspendSchedulesOf(tx, actor, { mintedBy: userUrn }, reason);
          suspended.tests.push(...viaMinted.tests);
          suspended.policies.push(...viaMinted.policies);
        }
        const cancelled = suspendWork ? await this.tasks.cancelAllCreatedBy(tx, actor, userUrn) : [];
        // Its webhook subscriptions stop delivering (docs/webhooks.md): turned off, each audited; its owner or an
        // admin turns one on again. So do those set through the service-account tokens it minted (revoked above as
        // handed out by it): whoever held one chose where they deliver.
        const webhooks = suspendWork
          ? [
              ...(await disableWebhookSubscriptionsOf(tx, userUrn, reason)),
              ...(first ? [] : await disableWebhookSubscriptionsSetThroughTokensMintedBy(tx, userUrn, reason)),
            ]
          : [];
        for (const id of webhooks) {
          await recordAudit(
            tx,
            actor,
            "webhook.disabled",
            makeUrn(this.config.URN_NAMESPACE, "webhookSubscription", id),
            {
              reason,
              trigger: "revokeActorAccess",
            },
          );
        }
        // As every revocation, whatever suspendWork says: the work set through the tokens revoked here, or through
        // tokens created with them (another user's too: their tokens are refused with these), stops. What the lines
        // above suspended already is left as it is.
        const viaRevoked = await stopWorkSetThrough(tx, revoked, this.config.URN_NAMESPACE, {
          by: actor.urn,
          cause: reason,
          trigger: "revokeActorAccess",
          via: actor.via,
        });
        suspended.tests.push(...viaRevoked.tests.map((t) => this.ofTest(t)));
        suspended.policies.push(...viaRevoked.policies.map((p) => this.ofPolicy(p)));
        webhooks.push(...viaRevoked.webhookIds);
        await recordAudit(tx, actor, "actor.revokeAccess", userUrn, {
          tokens: revoked.length,
          suspendWork,
          scheduledTests: suspended.tests.length,
          retentionPolicies: suspended.policies.length,
          tasks: cancelled.length,
          webhookSubscriptions: webhooks.length,
          ...(given && { reason: given }),
        });
        return { revokedTokenIds: revoked, minted, ...suspended, tasks: cancelled };
      },
    );
    // The commit revokes; these only shorten every replica's caches and end waiting tasks now (never failing). The
    // answer lists the first MAX_DELEGATED_WORK tasks; the rest are asked to stop all the same, and stop at their claim.
    if (revokedTokenIds.length > 0) await this.verifier.revokedAllOf(userUrn);
    for (const id of minted) await this.verifier.revoked(id);
    const listed = tasks.slice(0, MAX_DELEGATED_WORK);
    await this.tasks.settleCancelled(listed);
    const settled = await this.readTasks(listed.map((t) => t.id));
    this.logger.info(
      { actor: actor.urn, user: userUrn, tokens: revokedTokenIds.length, work: tests.length + policies.length },
      "actor access revoked",
    );
    return { revokedTokenIds, suspendedWork: [...tests, ...policies, ...settled] };
  }

  /**
   * Suspends the user's deferred work not suspended yet — its retention policies, and its tests that have a schedule
   * or actions (which run for their owner at every push) — each with its audit row, in the caller's transaction.
   */
  private async suspendSchedulesOf(
    tx: Prisma.TransactionClient,
    actor: Actor,
    whose: Parameters<typeof suspendDeferredWorkOf>[1],
    reason: string,
  ) {
    const { tests, policies } = await suspendDeferredWorkOf(tx, whose, reason, new Date(), {
      suspendedBy: actor.urn,
      policyUrnOf: (id) => makeUrn(this.config.URN_NAMESPACE, "retentionPolicy", id),
    });
    const testWork = tests.map((t) => this.ofTest(t));
    const policyWork = policies.map((p) => this.ofPolicy(p));
    for (const work of testWork) {
      await recordAudit(tx, actor, "test.schedule.suspended", work.urn, { reason, trigger: "revokeActorAccess" });
    }
    for (const work of policyWork) {
      await recordAudit(tx, actor, "retentionPolicy.suspended", work.urn, { reason, trigger: "revokeActorAccess" });
    }
    return { tests: testWork, policies: policyWork };
  }

  /**
   * Own work is the caller's to see (its urn, or a token acting for it or minted by it); anything else needs
   * MANAGE_ACCESS_TOKENS, settled before whether the token exists is told.
   */
  private async requireMayView(actor: Actor, ownerUrn?: string, tokenId?: string): Promise<void> {
    let own = ownerUrn === undefined || ownerUrn === actor.urn;
    if (own && tokenId !== undefined) {
      const token = await this.store.find(tokenId);
      own = token !== null && (token.metadata.actorUrn === actor.urn || token.metadata.ownerUrn === actor.urn);
    }
    if (own || (await this.engine.has(actor, "MANAGE_ACCESS_TOKENS"))) return;
    throw forbidden(
      `${actor.urn} is unauthorized to list the delegated work of other users or their tokens: that needs ` +
        `MANAGE_ACCESS_TOKENS.`,
    );
  }

  /** Up to `limit` items, schedules first, then tasks and tokens newest first; each statement bounded by `limit`. */
  private async find(by: { ownerUrn?: string; tokenId?: string }, limit: number): Promise<DelegatedWork[]> {
    const { prisma } = this.db;
    const tests = await scheduledTestsOwnedBy(prisma, by, limit);
    const policies = await retentionPoliciesOwnedBy(prisma, by, limit);
    const tasks = await this.readTasks(await taskIdsCreatedBy(prisma, by, limit));
    const tokens = await accessTokensMintedBy(prisma, { ownerUrn: by.ownerUrn, parentTokenId: by.tokenId }, limit);
    const now = Date.now();
    return [
      ...tests.map((t) => this.ofTest(t)),
      ...policies.map((p) => this.ofPolicy(p)),
      ...tasks,
      ...tokens.map((t): DelegatedWork => ({
        kind: "ACCESS_TOKEN",
        urn: this.store.urnOf(t.id),
        ownerUrn: t.ownerUrn,
        viaTokenId: t.parentTokenId,
        state: t.revokedAt ? "REVOKED" : t.expiresAt && t.expiresAt.getTime() <= now ? "EXPIRED" : "LIVE",
        suspendedAt: null,
        suspendedReason: null,
        cancelRequested: null,
      })),
    ].slice(0, limit);
  }

  /** The tasks of these ids as DelegatedWork, in the same order (one statement through @mdp/tasks' reads). */
  private async readTasks(ids: readonly string[]): Promise<DelegatedWork[]> {
    if (ids.length === 0) return [];
    const rows = await this.tasks.readMany(ids);
    const byId = new Map(rows.map((r) => [r.id, r]));
    return ids.flatMap((id) => {
      const found = byId.get(id);
      return found ? [this.ofTask(found)] : [];
    });
  }

  private ofTask(row: TaskRow): DelegatedWork {
    return {
      kind: "TASK",
      urn: taskUrn(this.config.URN_NAMESPACE, row.id),
      ownerUrn: row.createdBy,
      viaTokenId: row.createdVia,
      state: presentState(row).state,
      suspendedAt: null,
      suspendedReason: null,
      cancelRequested: row.cancelRequested,
    };
  }

  private ofTest(test: {
    urn: string;
    ownerUrn: string;
    ownerTokenId: string | null;
    state: string;
    suspendedAt: Date | null;
    suspendedReason: string | null;
  }): DelegatedWork {
    return {
      kind: "SCHEDULED_TEST",
      urn: test.urn,
      ownerUrn: test.ownerUrn,
      viaTokenId: test.ownerTokenId,
      state: test.suspendedAt ? "SUSPENDED" : test.state,
      suspendedAt: test.suspendedAt?.getTime() ?? null,
      suspendedReason: test.suspendedReason,
      cancelRequested: null,
    };
  }

  private ofPolicy(policy: {
    id: string;
    ownerUrn: string;
    ownerTokenId: string | null;
    suspendedAt: Date | null;
    suspendedReason: string | null;
  }): DelegatedWork {
    return {
      kind: "RETENTION_POLICY",
      urn: makeUrn(this.config.URN_NAMESPACE, "retentionPolicy", policy.id),
      ownerUrn: policy.ownerUrn,
      viaTokenId: policy.ownerTokenId,
      state: policy.suspendedAt ? "SUSPENDED" : "ACTIVE",
      suspendedAt: policy.suspendedAt?.getTime() ?? null,
      suspendedReason: policy.suspendedReason,
      cancelRequested: null,
    };
  }
}
