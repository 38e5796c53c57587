import { conflict } from "@mdp/core";
import { CLOSED_WEBHOOK_CIRCUIT } from "@mdp/webhooks";
import type { Prisma, PrismaClient } from "../generated/prisma/client";
import type { Queryable } from "../timeseries/timeseries.store";
import {
  WEBHOOK_LIMITS,
  type WebhookSubscriptionHealth,
  type WebhookSubscriptionInsert,
  type WebhookSubscriptionRow,
} from "./webhook.types";

/** Webhook subscriptions (webhook_subscription): the owner's lock and room, the rows, a secret's rotation, turning off. */

/** Serializes, per owner, the creations that count against MAX_WEBHOOK_SUBSCRIPTIONS_PER_USER (first statement). */
export async function lockWebhookOwner(tx: Prisma.TransactionClient, ownerUrn: string): Promise<void> {
  await tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtext(${`webhook-owner:${ownerUrn}`}))`;
}

/** Refuses (409 naming the limit and its setting) one more subscription than `max` for `ownerUrn`. */
export async function requireWebhookRoom(tx: Prisma.TransactionClient, ownerUrn: string, max: number): Promise<void> {
  const owned = await tx.webhookSubscription.count({ where: { ownerUrn } });
  if (owned >= max) {
    throw conflict(
      `${ownerUrn} already owns ${owned} webhook subscriptions, the limit of ${max} ` +
        `(MAX_WEBHOOK_SUBSCRIPTIONS_PER_USER); delete one first.`,
    );
  }
}

export async function insertWebhookSubscription(
  tx: Prisma.TransactionClient,
  row: WebhookSubscriptionInsert,
): Promise<WebhookSubscriptionRow & WebhookSubscriptionHealth> {
  return tx.webhookSubscription.create({ data: row });
}

export async function findWebhookSubscription(
  prisma: Pick<PrismaClient, "webhookSubscription"> | Prisma.TransactionClient,
  id: string,
): Promise<(WebhookSubscriptionRow & WebhookSubscriptionHealth) | null> {
  return prisma.webhookSubscription.findUnique({ where: { id } });
}

/** Subscriptions, newest first: one owner's, or everyone's (ownerUrn null). */
export async function listWebhookSubscriptions(
  prisma: Pick<PrismaClient, "webhookSubscription">,
  ownerUrn: string | null,
  page: { start: number; count: number },
): Promise<{ total: number; rows: Array<WebhookSubscriptionRow & WebhookSubscriptionHealth> }> {
  const where = ownerUrn === null ? {} : { ownerUrn };
  const [total, rows] = await Promise.all([
    prisma.webhookSubscription.count({ where }),
    prisma.webhookSubscription.findMany({
      where,
      orderBy: [{ createdAt: "desc" }, { id: "desc" }],
      skip: page.start,
      take: Math.min(page.count, WEBHOOK_LIMITS.maxPage),
    }),
  ]);
  return { total, rows };
}

export async function updateWebhookSubscription(
  tx: Prisma.TransactionClient,
  id: string,
  data: Partial<
    Pick<
      WebhookSubscriptionRow,
      "url" | "eventTypes" | "categories" | "entityUrn" | "actorUrn" | "testUrn" | "description" | "active"
    > & { disabledReason: string | null; ownerTokenId: string | null; resetCircuit: boolean }
  >,
): Promise<WebhookSubscriptionRow & WebhookSubscriptionHealth> {
  const { resetCircuit, ...fields } = data;
  // Turned on again, or moved to another url: its receiver starts with a closed circuit and no run of failures.
  const reset = resetCircuit ? { ...CLOSED_WEBHOOK_CIRCUIT } : {};
  return tx.webhookSubscription.update({ where: { id }, data: { ...fields, ...reset } });
}

/** Deletes the subscription and its delivery log (cascade); answers whether it existed. */
export async function deleteWebhookSubscription(tx: Prisma.TransactionClient, id: string): Promise<boolean> {
  const { count } = await tx.webhookSubscription.deleteMany({ where: { id } });
  return count > 0;
}

/**
 * rotateWebhookSecret: `sealed` signs from now on; the secret it replaces signs too until `previousExpiresAt` (null: at
 * once no more). A rotation during another's overlap drops the older secret: two sign at most.
 */
export async function rotateWebhookSecretRow(
  tx: Prisma.TransactionClient,
  id: string,
  sealed: string,
  previousExpiresAt: Date | null,
): Promise<WebhookSubscriptionRow & WebhookSubscriptionHealth> {
  const [row] = await tx.$queryRaw<Array<{ previous: string }>>`
    SELECT secret_sealed AS previous FROM webhook_subscription WHERE id = ${id}::uuid FOR UPDATE`;
  return tx.webhookSubscription.update({
    where: { id },
    data: {
      secretSealed: sealed,
      previousSecretSealed: previousExpiresAt === null ? null : row!.previous,
      previousSecretExpiresAt: previousExpiresAt,
    },
  });
}

/** revokeActorAccess: the user's active subscriptions stop delivering (turned off, with the reason); their ids. */
export async function disableWebhookSubscriptionsOf(
  tx: Prisma.TransactionClient,
  ownerUrn: string,
  reason: string,
): Promise<string[]> {
  const rows = await tx.webhookSubscription.findMany({ where: { ownerUrn, active: true }, select: { id: true } });
  return disable(tx, rows, reason);
}

/**
 * revokeActorAccess of a minter: the active subscriptions another user (a service account) set through a
 * SERVICE_ACCOUNT token this user minted stop delivering too, whether that token is still live or not. Whoever held the
 * token chose their urls and filters, and revokeActorAccess treats the secrets the minter was handed as no longer
 * trusted. A PERSONAL token it minted for someone acts for that someone (bounded by the minter at every use): what it
 * subscribed is left alone. Their ids.
 */
export async function disableWebhookSubscriptionsSetThroughTokensMintedBy(
  tx: Prisma.TransactionClient,
  minterUrn: string,
  reason: string,
): Promise<string[]> {
  const rows = await tx.$queryRaw<Array<{ id: string }>>`
    SELECT s.id::text AS id
      FROM webhook_subscription s JOIN access_token t ON t.id::text = s.owner_token_id
     WHERE s.active AND t.owner_urn = ${minterUrn} AND t.type = 'SERVICE_ACCOUNT' AND s.owner_urn <> ${minterUrn}`;
  return disable(tx, rows, reason);
}

/**
 * A revocation: the active subscriptions last set through one of these tokens by whom it acts for (the tokens the
 * revocation stops: tokensStoppedWith) stop delivering, each with the reason `reasonOf` gives for the token it was set
 * through. Their ids and the token each was set through.
 */
export async function disableWebhookSubscriptionsSetThrough(
  tx: Prisma.TransactionClient,
  setThrough: ReadonlyArray<{ tokenId: string; ownerUrn: string }>,
  reasonOf: (tokenId: string) => string,
): Promise<Array<{ id: string; ownerTokenId: string }>> {
  if (setThrough.length === 0) return [];
  // The token's own user only: one an admin changed keeps its owner's token, and its owner its owner.
  const rows = await tx.$queryRaw<Array<{ id: string; ownerTokenId: string }>>`
    SELECT id::text AS id, owner_token_id AS "ownerTokenId" FROM webhook_subscription
     WHERE active AND (owner_token_id, owner_urn) IN (
       SELECT * FROM unnest(${setThrough.map((t) => t.tokenId)}::text[], ${setThrough.map((t) => t.ownerUrn)}::text[]))`;
  const byToken = new Map<string, Array<{ id: string }>>();
  for (const row of rows) byToken.set(row.ownerTokenId, [...(byToken.get(row.ownerTokenId) ?? []), row]);
  for (const [tokenId, subscriptions] of byToken) await disable(tx, subscriptions, reasonOf(tokenId));
  return rows;
}

async function disable(tx: Prisma.TransactionClient, rows: Array<{ id: string }>, reason: string): Promise<string[]> {
  if (rows.length === 0) return [];
  await tx.webhookSubscription.updateMany({
    where: { id: { in: rows.map((r) => r.id) } },
    data: { active: false, disabledReason: reason.slice(0, WEBHOOK_LIMITS.maxDescription) },
  });
  return rows.map((r) => r.id);
}

/** The subscriptions that deliver (active), as the fan-out matches them. */
export async function activeWebhookSubscriptions(db: Queryable): Promise<WebhookSubscriptionRow[]> {
  const { rows } = await db.query<WebhookSubscriptionRow>(
    `SELECT id, owner_urn AS "ownerUrn", owner_token_id AS "ownerTokenId", url, event_types AS "eventTypes",
            categories, entity_urn AS "entityUrn", actor_urn AS "actorUrn", test_urn AS "testUrn", description,
            active, disabled_reason AS "disabledReason", secret_sealed AS "secretSealed",
            created_at AS "createdAt", updated_at AS "updatedAt"
       FROM webhook_subscription WHERE active`,
  );
  return rows;
}
