import { randomUUID } from "node:crypto";
import type { z } from "zod";
import { AppError, badInput, conflict, forbidden, notFound, type Config, type Logger } from "@mdp/core";
import {
  newWebhookSecret,
  resolveWebhookTarget,
  webhookLookup,
  type AddressLookup,
  sealWebhookSecret,
  WebhookTargetError,
  webhookTargetPolicy,
  type WebhookTargetPolicy,
} from "@mdp/webhooks";
import {
  AuditBudget,
  type Database,
  deleteWebhookSubscription,
  dropOverflowingDeliveries,
  findWebhookSubscription,
  inPrismaTransaction,
  insertWebhookSubscription,
  lockWebhookOwner,
  replayWebhookDeliveries,
  replicaReads,
  requireWebhookRoom,
  rotateWebhookSecretRow,
  updateWebhookSubscription,
  WEBHOOK_LIMITS,
  type WebhookDeliveryRow,
  type WebhookSubscriptionRow,
} from "@mdp/db";
import { recordAudit } from "../audit/audit.service";
import { ownedBy, type Actor } from "../auth/actor";
import type { PolicyEngine } from "../policies/policy-engine";
import {
  createArgs,
  deliveriesArgs,
  idArgs,
  listArgs,
  replayArgs,
  rotateArgs,
  updateArgs,
  view,
  WEBHOOK_ADMIN_PRIVILEGE,
  webhookUrnOf,
  type WebhookSubscriptionView,
} from "./webhook-contracts";

export interface WebhookServiceDeps {
  db: Database;
  engine: PolicyEngine;
  config: Pick<
    Config,
    | "NODE_ENV"
    | "WEBHOOK_ALLOW_PRIVATE_TARGETS"
    | "MAX_WEBHOOK_SUBSCRIPTIONS_PER_USER"
    | "TOKEN_SIGNING_KEY"
    | "WEBHOOK_MAX_PENDING_PER_SUBSCRIPTION"
    | "WEBHOOK_TIMEOUT_MS"
    | "URN_NAMESPACE"
  >;
  logger: Logger;
  lookup?: AddressLookup;
  /**
   * Each write's audit row is one its caller can cause at will (any user subscribes for itself): per actor, as the
   * queue dashboard's writes are (docs/audit.md "How many rows one actor can cause").
   */
  budget?: AuditBudget;
}

/**
 * Webhook subscriptions and their delivery logs (docs/webhooks.md). Any authenticated user subscribes for itself: a
 * subscription's one principal is its creator, and each event is delivered only when that owner may read it at the
 * delivery (the evaluation workers check). Another user's subscriptions need MANAGE_SYSTEM_OPERATIONS.
 */
export class WebhookService {
  private readonly policy: WebhookTargetPolicy;
  private readonly lookup: AddressLookup;

  private readonly db: Database;
  private readonly engine: PolicyEngine;
  private readonly config: WebhookServiceDeps["config"];
  private readonly logger: Logger;
  private readonly budget: AuditBudget;

  constructor(deps: WebhookServiceDeps) {
    this.db = deps.db;
    this.engine = deps.engine;
    this.config = deps.config;
    this.logger = deps.logger;
    this.budget = deps.budget ?? new AuditBudget();
    this.policy = webhookTargetPolicy(deps.config);
    this.lookup = deps.lookup ?? webhookLookup(this.policy);
  }

  async create(
    actor: Actor,
    { input }: z.output<typeof createArgs>,
  ): Promise<{ subscription: WebhookSubscriptionView; secret: string }> {
    await this.requireTarget(input.url, "input.url");
    const secret = newWebhookSecret();
    const row = await inPrismaTransaction(this.db.prisma, async (tx) => {
      await lockWebhookOwner(tx, actor.urn);
      await requireWebhookRoom(tx, actor.urn, this.config.MAX_WEBHOOK_SUBSCRIPTIONS_PER_USER);
      this.takeBudget(actor);
      const created = await insertWebhookSubscription(tx, {
        id: randomUUID(),
        ...ownedBy(actor),
        url: input.url,
        eventTypes: input.eventTypes,
        categories: input.categories ?? [],
        entityUrn: input.entityUrn ?? null,
        actorUrn: input.actorUrn ?? null,
        testUrn: input.testUrn ?? null,
        description: input.description ?? null,
        active: true,
        secretSealed: sealWebhookSecret(secret, this.config.TOKEN_SIGNING_KEY),
      });
      // The url's host only: a url may carry a receiver's own token in its path or query.
      await recordAudit(tx, actor, "webhook.create", webhookUrnOf(this.config.URN_NAMESPACE, created.id), {
        host: new URL(created.url).host,
        eventTypes: created.eventTypes,
        categories: created.categories,
      });
      return created;
    });
    return { subscription: view(this.config.URN_NAMESPACE, row), secret };
  }

  async list(
    actor: Actor,
    { input }: z.output<typeof listArgs>,
  ): Promise<{ total: number; subscriptions: WebhookSubscriptionView[] }> {
    const ownerUrn = input.all ? null : (input.ownerUrn ?? actor.urn);
    if (ownerUrn !== actor.urn) {
      await this.engine.require(actor, WEBHOOK_ADMIN_PRIVILEGE, "list the webhook subscriptions of other users");
    }
    const { total, rows } = await replicaReads.listWebhookSubscriptions(this.db.stale, ownerUrn, input);
    return { total, subscriptions: rows.map((r) => view(this.config.URN_NAMESPACE, r)) };
  }

  async update(
    actor: Actor,
    { input: { id, ...input } }: z.output<typeof updateArgs>,
  ): Promise<WebhookSubscriptionView> {
    if (input.url != null) await this.requireTarget(input.url, "input.url");
    const row = await inPrismaTransaction(this.db.prisma, async (tx) => {
      const found = await this.mayChange(actor, await findWebhookSubscription(tx, id), "change");
      const own = found.ownerUrn === actor.urn;
      // Its events are read with its owner's privileges: whoever chose another url would receive what the owner may
      // read, not what it may. An admin turns it off, changes its filters, or deletes it.
      if (!own && input.url != null && input.url !== found.url) {
        throw forbidden(
          `${actor.urn} is unauthorized to change the url of ${found.ownerUrn}'s webhook subscription: its events ` +
            `are read with its owner's privileges, so only its owner chooses where they go (turn it off or ` +
            `delete it instead).`,
        );
      }
      this.takeBudget(actor);
      const data = {
        ...(input.url != null && { url: input.url }),
        ...(input.eventTypes != null && { eventTypes: input.eventTypes }),
        ...(input.categories !== undefined && { categories: input.categories ?? [] }),
        ...(input.entityUrn !== undefined && { entityUrn: input.entityUrn }),
        ...(input.actorUrn !== undefined && { actorUrn: input.actorUrn }),
        ...(input.testUrn !== undefined && { testUrn: input.testUrn }),
        ...(input.description !== undefined && { description: input.description }),
        ...(input.active != null && { active: input.active, disabledReason: null }),
        // Turned on again (perhaps after failing for days) or moved: a fresh circuit, its days of failing forgotten.
        ...(((input.active === true && !found.active) || (input.url != null && input.url !== found.url)) && {
          resetCircuit: true,
        }),
        // The owner's own edit is made through its current token: deliveries are bounded by that one from now on.
        ...(own && { ownerTokenId: actor.tokenId ?? null }),
      };
      const updated = await updateWebhookSubscription(tx, id, data);
      await recordAudit(tx, actor, "webhook.update", webhookUrnOf(this.config.URN_NAMESPACE, id), {
        ownerUrn: found.ownerUrn,
        changed: Object.keys(data).filter(
          (k) => k !== "ownerTokenId" && k !== "disabledReason" && k !== "resetCircuit",
        ),
        ...(input.url != null && { host: new URL(input.url).host }),
      });
      return updated;
    });
    return view(this.config.URN_NAMESPACE, row);
  }

  async delete(actor: Actor, { id }: z.output<typeof idArgs>): Promise<boolean> {
    return inPrismaTransaction(this.db.prisma, async (tx) => {
      const found = await this.mayChange(actor, await findWebhookSubscription(tx, id), "delete");
      this.takeBudget(actor);
      await deleteWebhookSubscription(tx, id);
      await recordAudit(tx, actor, "webhook.delete", webhookUrnOf(this.config.URN_NAMESPACE, id), {
        ownerUrn: found.ownerUrn,
      });
      return true;
    });
  }

  /**
   * rotateWebhookSecret: a new secret signs the subscription's deliveries from now on, and the one it replaces signs
   * them too for `overlapSeconds` (at most 7 days), so a receiver moves to the new one without refusing any
   * delivery meanwhile. Its owner only: the secret proves deliveries to the owner's receiver, so whoever held it could
   * forge them. Answers the new secret once.
   */
  async rotateSecret(
    actor: Actor,
    input: z.output<typeof rotateArgs>,
  ): Promise<{ subscription: WebhookSubscriptionView; secret: string }> {
    const secret = newWebhookSecret();
    const row = await inPrismaTransaction(this.db.prisma, async (tx) => {
      const found = await this.mayChange(actor, await findWebhookSubscription(tx, input.id), "rotate the secret of");
      if (found.ownerUrn !== actor.urn) {
        throw forbidden(
          `${actor.urn} is unauthorized to rotate the secret of ${found.ownerUrn}'s webhook subscription: the secret ` +
            `proves deliveries to its owner's receiver, so only its owner holds it.`,
        );
      }
      this.takeBudget(actor);
      const expires = input.overlapSeconds > 0 ? new Date(Date.now() + input.overlapSeconds * 1000) : null;
      const rotated = await rotateWebhookSecretRow(
        tx,
        input.id,
        sealWebhookSecret(secret, this.config.TOKEN_SIGNING_KEY),
        expires,
      );
      await recordAudit(tx, actor, "webhook.rotateSecret", webhookUrnOf(this.config.URN_NAMESPACE, input.id), {
        ownerUrn: found.ownerUrn,
        overlapSeconds: input.overlapSeconds,
      });
      return rotated;
    });
    return { subscription: view(this.config.URN_NAMESPACE, row), secret };
  }

  async listDeliveries(
    actor: Actor,
    { input }: z.output<typeof deliveriesArgs>,
  ): Promise<{ total: number; deliveries: WebhookDeliveryRow[] }> {
    await this.mayChange(actor, await findWebhookSubscription(this.db.prisma, input.subscriptionId), "view");
    const { total, rows } = await replicaReads.listWebhookDeliveries(this.db.stale, input.subscriptionId, {
      status: input.status ?? null,
      start: input.start,
      count: input.count,
    });
    return { total, deliveries: rows };
  }

  /**
   * replayWebhookDeliveries: the chosen deliveries (by id, or every one since a time; at most `limit`, one per event)
   * are sent again as new deliveries carrying the same event ids and bodies, each signed afresh, and read again for
   * the owner at delivery (an event it may no longer read is skipped). Within the subscription's pending bound.
   */
  async replay(
    actor: Actor,
    { input }: z.output<typeof replayArgs>,
  ): Promise<{ replayed: number; deliveryIds: string[] }> {
    const ids = await inPrismaTransaction(this.db.prisma, async (tx) => {
      const found = await this.mayChange(actor, await findWebhookSubscription(tx, input.subscriptionId), "replay");
      if (!found.active) {
        throw conflict(`Webhook subscription ${input.subscriptionId} is turned off: turn it on (active: true) first`);
      }
      this.takeBudget(actor);
      const { ids, pendingReplays } = await replayWebhookDeliveries(tx, input.subscriptionId, {
        deliveryIds: input.deliveryIds ?? null,
        since: input.since == null ? null : new Date(input.since),
        limit: input.limit,
      });
      // Replays count against the subscription's pending bound too: past it, its oldest waiting ones are dropped.
      await dropOverflowingDeliveries(
        tx,
        ids.length > 0 ? [input.subscriptionId] : [],
        this.config.WEBHOOK_MAX_PENDING_PER_SUBSCRIPTION,
      );
      if (pendingReplays >= WEBHOOK_LIMITS.maxPendingReplays) {
        throw conflict(
          `Webhook subscription ${input.subscriptionId} already has ${WEBHOOK_LIMITS.maxPendingReplays} replayed ` +
            `deliveries waiting to be sent (the most at once): replay again once they are sent`,
        );
      }
      await recordAudit(tx, actor, "webhook.replay", webhookUrnOf(this.config.URN_NAMESPACE, input.subscriptionId), {
        ownerUrn: found.ownerUrn,
        replayed: ids.length,
        ...(input.since != null && { since: input.since }),
        ...(input.deliveryIds && { deliveryIds: input.deliveryIds.length }),
      });
      return ids;
    });
    // Committed, they are due at once: the workers' dispatchers claim them (within a second).
    return { replayed: ids.length, deliveryIds: ids };
  }

  /**
   * One audit row's worth of the actor's budget, taken once the write has passed every check that needs nothing
   * written, before its first statement: past it the write is refused (429, nothing written), as the queue dashboard's.
   */
  private takeBudget(actor: Actor): void {
    const retryAfterSeconds = this.budget.take(actor.urn);
    if (retryAfterSeconds === 0) return;
    throw new AppError(
      "TOO_MANY_REQUESTS",
      `Rate limit exceeded: at most ${this.budget.capacity} webhook subscription writes (create, update, delete, ` +
        `replay) at once, then ${this.budget.perMinute} per minute per actor (the audit budget); retry in ` +
        `${retryAfterSeconds} s.`,
      { limit: "webhook subscription writes", perMinute: this.budget.perMinute, retryAfterSeconds },
    );
  }

  /** The subscription when the actor may act on it (its owner, or an admin); not found otherwise for a non-admin. */
  private async mayChange(actor: Actor, row: WebhookSubscriptionRow | null, what: string) {
    if (row && row.ownerUrn === actor.urn) return row;
    // Another user's (or none): only an admin learns whether it exists.
    await this.engine.require(actor, WEBHOOK_ADMIN_PRIVILEGE, `${what} the webhook subscriptions of other users`);
    if (!row) throw notFound("No such webhook subscription");
    return row;
  }

  /** In production, the url's host must resolve to public addresses only (unless WEBHOOK_ALLOW_PRIVATE_TARGETS). */
  private async requireTarget(url: string, at: string): Promise<void> {
    if (this.policy.allowPrivate) return;
    try {
      // Bounded: a host whose DNS never answers must not hold the request (nor the caller's connection) open.
      await resolveWebhookTarget(new URL(url).hostname, this.policy, this.lookup, this.config.WEBHOOK_TIMEOUT_MS);
    } catch (error) {
      if (error instanceof WebhookTargetError) throw badInput(`${at}: ${error.message}`);
      throw badInput(`${at}: its host does not resolve (within ${this.config.WEBHOOK_TIMEOUT_MS} ms)`);
    }
  }
}
