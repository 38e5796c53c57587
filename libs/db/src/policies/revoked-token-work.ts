import type { MetadataTest, Prisma, RetentionPolicy } from "../generated/prisma/client";
import { boundAuditEvent, type AuditEventInput } from "../audit";
import { disableWebhookSubscriptionsSetThrough } from "../events/webhook-subscription.repository";
import { tokensStoppedWith } from "../tokens/access-token-revocation.repository";
import { suspendDeferredWorkOf } from "./delegated-work.repository";

/** How a revocation stops the work set through the tokens it revoked: who, why, and how its rows name things. */
export interface RevokedTokensWork {
  /** who revoked them: the audit rows' actor and the suspension events' */
  by: string;
  /** what the suspensions' reasons start with: the operation and who, e.g. `revokeAccessToken by <urn>` */
  cause: string;
  /** the audit rows' `trigger` (`revokeAccessToken`, `reuseDetected`, `idle`, ...) */
  trigger: string;
  /** more details of each audit row (the gateway's `via`) */
  details?: Record<string, unknown>;
  policyUrnOf: (id: string) => string;
  webhookUrnOf: (id: string) => string;
}

/** What a revocation stopped: the tests and retention policies it suspended, the subscriptions it turned off. */
export interface StoppedWork {
  tests: MetadataTest[];
  policies: RetentionPolicy[];
  webhookIds: string[];
}

/**
 * Revoking a token stops the work set through it (docs/authorization.md "Deferred work"): in the revocation's own
 * transaction, every test with a schedule, actions or evaluation on change, every retention policy and every webhook
 * subscription last set through one of `revokedIds`, or through a token created (down its chain) with one of them, by
 * whom that token acts for, is suspended or turned off, each with a reason naming the revoked token, its platform event
 * and its audit row (`test.schedule.suspended`, `retentionPolicy.suspended`, `webhook.disabled`), as revokeActorAccess
 * suspends work. `revokedIds`: the tokens this transaction revoked (not those revoked before, whose work was stopped
 * then and may have been resumed since). Expiry is no revocation: nothing here runs for it.
 */
export async function stopWorkSetThroughRevokedTokens(
  tx: Prisma.TransactionClient,
  revokedIds: readonly string[],
  how: RevokedTokensWork,
): Promise<StoppedWork> {
  const stopped = await tokensStoppedWith(tx, revokedIds);
  if (stopped.length === 0) return { tests: [], policies: [], webhookIds: [] };
  const revokedOf = new Map(stopped.map((t) => [t.id, t.revokedId]));
  const reasonOf = (via: string) => {
    const revoked = revokedOf.get(via) ?? via;
    return revoked === via
      ? `${how.cause}: it was set through access token ${via}, which was revoked`
      : `${how.cause}: it was set through access token ${via}, created with access token ${revoked}, which was revoked`;
  };
  const setThrough = stopped.map((t) => ({ tokenId: t.id, ownerUrn: t.actorUrn }));
  const { tests, policies } = await suspendDeferredWorkOf(
    tx,
    { setThrough },
    (work) => reasonOf(work.ownerTokenId ?? ""),
    new Date(),
    { suspendedBy: how.by, policyUrnOf: how.policyUrnOf },
  );
  const webhooks = await disableWebhookSubscriptionsSetThrough(tx, setThrough, reasonOf);
  const row = (action: string, targetUrn: string, via: string, reason: string): AuditEventInput => ({
    actorUrn: how.by,
    action,
    targetUrn,
    details: {
      reason,
      trigger: how.trigger,
      revokedTokenId: revokedOf.get(via) ?? via,
      viaTokenId: via,
      ...how.details,
    },
  });
  const rows = [
    ...tests.map((t) => row("test.schedule.suspended", t.urn, t.ownerTokenId ?? "", t.suspendedReason ?? "")),
    ...policies.map((p) =>
      row("retentionPolicy.suspended", how.policyUrnOf(p.id), p.ownerTokenId ?? "", p.suspendedReason ?? ""),
    ),
    ...webhooks.map((s) => row("webhook.disabled", how.webhookUrnOf(s.id), s.ownerTokenId, reasonOf(s.ownerTokenId))),
  ];
  if (rows.length > 0) {
    await tx.auditEvent.createMany({
      data: rows.map((r) => {
        const bounded = boundAuditEvent(r);
        return { ...bounded, details: bounded.details as Prisma.InputJsonObject };
      }),
    });
  }
  return { tests, policies, webhookIds: webhooks.map((s) => s.id) };
}
