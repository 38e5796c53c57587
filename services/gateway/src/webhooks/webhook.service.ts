import { randomUUID } from "node:crypto";
import { z } from "zod";
import {
  badInput,
  conflict,
  ENTITY_CHANGE_CATEGORIES,
  forbidden,
  makeUrn,
  MAX_EPOCH_MS,
  newWebhookSecret,
  notFound,
  PLATFORM_EVENT_TYPES,
  resolveWebhookTarget,
  webhookLookup,
  type AddressLookup,
  sealWebhookSecret,
  WebhookTargetError,
  webhookTargetPolicy,
  type Config,
  type Logger,
  type WebhookTargetPolicy,
} from "@mdp/core";
import {
  deleteWebhookSubscription,
  findWebhookSubscription,
  inPrismaTransaction,
  insertWebhookSubscription,
  listWebhookDeliveries,
  listWebhookSubscriptions,
  lockWebhookOwner,
  replayWebhookDeliveries,
  requireWebhookRoom,
  updateWebhookSubscription,
  WEBHOOK_LIMITS,
  type Database,
  type WebhookDeliveryRow,
  type WebhookSubscriptionRow,
} from "@mdp/db";
import { webhookDeliveryOptions, type Producer } from "@mdp/queues";
import { recordAudit } from "../audit/audit.service";
import { ownedBy, type Actor } from "../auth/actor";
import { pageFields } from "../graphql/paging";
import { parseArgs, rule, said, textField, urnField, wholeNumberField } from "../http/validate";
import type { PolicyEngine } from "../policies/policy-engine";

/** Who may see, change or delete another user's subscriptions and their delivery logs. */
export const WEBHOOK_ADMIN_PRIVILEGE = "MANAGE_SYSTEM_OPERATIONS" as const;
const CATEGORIES = Object.keys(ENTITY_CHANGE_CATEGORIES) as [string, ...string[]];
const DELIVERY_STATUSES = ["PENDING", "DELIVERED", "FAILED", "SKIPPED"] as const;
/** replayWebhookDeliveries without a limit */
export const DEFAULT_REPLAY = 100;

export const webhookUrnOf = (namespace: string, id: string) => makeUrn(namespace, "webhookSubscription", id);

/** An absolute http(s) url without credentials, at most WEBHOOK_LIMITS.maxUrlLength characters once normalized. */
function requireWebhookUrl(at: string, value: string): void {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw badInput(`${at} must be an absolute http or https url`);
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") {
    throw badInput(`${at} must be an http or https url, not ${url.protocol}`);
  }
  if (url.username || url.password) {
    throw badInput(`${at} must not hold credentials (user:password@): receivers verify the signature instead`);
  }
  if (url.href.length > WEBHOOK_LIMITS.maxUrlLength) {
    throw badInput(`${at} must be at most ${WEBHOOK_LIMITS.maxUrlLength} characters`);
  }
}

const urlField = textField({ min: 1, max: WEBHOOK_LIMITS.maxUrlLength, trim: true }).refine(...rule(requireWebhookUrl));

const eventTypesField = z
  .array(
    z.enum(
      PLATFORM_EVENT_TYPES,
      said((at) => `${at} must be one of ${PLATFORM_EVENT_TYPES.join(", ")}`),
    ),
  )
  .min(
    1,
    said((at) => `${at} must name at least one event type`),
  )
  .max(PLATFORM_EVENT_TYPES.length)
  .transform((types) => [...new Set(types)]);
const categoriesField = z
  .array(
    z.enum(
      CATEGORIES,
      said((at) => `${at} must be one of ${CATEGORIES.join(", ")}`),
    ),
  )
  .max(CATEGORIES.length)
  .nullish()
  .transform((c) => (c ? [...new Set(c)] : null));
const filterFields = {
  categories: categoriesField,
  entityUrn: urnField().nullish(),
  actorUrn: urnField("corpuser").nullish(),
  testUrn: urnField("test").nullish(),
  description: textField({ max: WEBHOOK_LIMITS.maxDescription }).nullish(),
};

const createArgs = z.object({
  input: z.object({ url: urlField, eventTypes: eventTypesField, ...filterFields }),
});
const updateArgs = z.object({
  input: z.object({
    id: z.string().uuid(said((at) => `${at} must be a subscription id (a UUID)`)),
    url: urlField.nullish(),
    eventTypes: eventTypesField.nullish(),
    active: z.boolean().nullish(),
    ...filterFields,
  }),
});
const idArgs = z.object({ id: z.string().uuid(said((at) => `${at} must be a subscription id (a UUID)`)) });
const listArgs = z.object({
  input: z
    .object({
      ...pageFields,
      ownerUrn: urnField("corpuser").nullish(),
      all: z.boolean().nullish(),
    })
    .nullish()
    .transform((i) => i ?? { start: 0, count: 20, ownerUrn: null, all: null }),
});
const deliveriesArgs = z.object({
  input: z.object({
    subscriptionId: z.string().uuid(said((at) => `${at} must be a subscription id (a UUID)`)),
    status: z.enum(DELIVERY_STATUSES).nullish(),
    start: pageFields.start,
    count: wholeNumberField(0, WEBHOOK_LIMITS.maxPage, 20),
  }),
});
const replayArgs = z.object({
  input: z
    .object({
      subscriptionId: z.string().uuid(said((at) => `${at} must be a subscription id (a UUID)`)),
      since: z
        .number()
        .int(said((at) => `${at} must be a time in epoch ms`))
        .min(
          0,
          said((at) => `${at} must be a time in epoch ms`),
        )
        .max(
          MAX_EPOCH_MS,
          said((at) => `${at} must be at most ${MAX_EPOCH_MS}`),
        )
        .nullish(),
      deliveryIds: z
        .array(z.string().uuid(said((at) => `${at} must be a delivery id (a UUID)`)))
        .min(1)
        .max(
          WEBHOOK_LIMITS.maxReplay,
          said((at) => `${at} may name at most ${WEBHOOK_LIMITS.maxReplay} deliveries`),
        )
        .nullish(),
      limit: wholeNumberField(1, WEBHOOK_LIMITS.maxReplay, DEFAULT_REPLAY),
    })
    .refine(
      (i) => (i.since == null) !== (i.deliveryIds == null),
      said((at) => `${at}: give since (epoch ms) or deliveryIds, one of them`),
    ),
});

export interface WebhookSubscriptionView {
  id: string;
  urn: string;
  ownerUrn: string;
  url: string;
  eventTypes: string[];
  categories: string[];
  entityUrn: string | null;
  actorUrn: string | null;
  testUrn: string | null;
  description: string | null;
  active: boolean;
  disabledReason: string | null;
  createdAt: number;
  updatedAt: number;
}

const view = (namespace: string, row: WebhookSubscriptionRow): WebhookSubscriptionView => ({
  id: row.id,
  urn: webhookUrnOf(namespace, row.id),
  ownerUrn: row.ownerUrn,
  url: row.url,
  eventTypes: row.eventTypes,
  categories: row.categories,
  entityUrn: row.entityUrn,
  actorUrn: row.actorUrn,
  testUrn: row.testUrn,
  description: row.description,
  active: row.active,
  disabledReason: row.disabledReason,
  createdAt: row.createdAt.getTime(),
  updatedAt: row.updatedAt.getTime(),
});

/**
 * Webhook subscriptions and their delivery logs (docs/webhooks.md). Any authenticated user subscribes for itself: a
 * subscription's one principal is its creator, and each event is delivered only when that owner may read it at the
 * delivery (the evaluation workers check). Another user's subscriptions need MANAGE_SYSTEM_OPERATIONS.
 */
export class WebhookService {
  private readonly policy: WebhookTargetPolicy;
  private readonly lookup: AddressLookup;

  constructor(
    private readonly db: Database,
    private readonly engine: PolicyEngine,
    private readonly deliveries: Pick<Producer<"webhookDelivery">, "enqueue">,
    private readonly config: Pick<
      Config,
      | "NODE_ENV"
      | "WEBHOOK_ALLOW_PRIVATE_TARGETS"
      | "MAX_WEBHOOK_SUBSCRIPTIONS_PER_USER"
      | "TOKEN_SIGNING_KEY"
      | "WEBHOOK_MAX_ATTEMPTS"
      | "WEBHOOK_RETRY_BASE_MS"
      | "WEBHOOK_TIMEOUT_MS"
      | "URN_NAMESPACE"
    >,
    private readonly logger: Logger,
    lookup?: AddressLookup,
  ) {
    this.policy = webhookTargetPolicy(config);
    this.lookup = lookup ?? webhookLookup(this.policy);
  }

  async create(actor: Actor, args: unknown): Promise<{ subscription: WebhookSubscriptionView; secret: string }> {
    const input = parseArgs(createArgs, args).input;
    await this.requireTarget(input.url, "input.url");
    const secret = newWebhookSecret();
    const row = await inPrismaTransaction(this.db.prisma, async (tx) => {
      await lockWebhookOwner(tx, actor.urn);
      await requireWebhookRoom(tx, actor.urn, this.config.MAX_WEBHOOK_SUBSCRIPTIONS_PER_USER);
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

  async list(actor: Actor, args: unknown): Promise<{ total: number; subscriptions: WebhookSubscriptionView[] }> {
    const input = parseArgs(listArgs, args).input;
    const ownerUrn = input.all ? null : (input.ownerUrn ?? actor.urn);
    if (ownerUrn !== actor.urn) {
      await this.engine.require(actor, WEBHOOK_ADMIN_PRIVILEGE, "list the webhook subscriptions of other users");
    }
    const { total, rows } = await listWebhookSubscriptions(this.db.prisma, ownerUrn, input);
    return { total, subscriptions: rows.map((r) => view(this.config.URN_NAMESPACE, r)) };
  }

  async update(actor: Actor, args: unknown): Promise<WebhookSubscriptionView> {
    const { id, ...input } = parseArgs(updateArgs, args).input;
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
      const data = {
        ...(input.url != null && { url: input.url }),
        ...(input.eventTypes != null && { eventTypes: input.eventTypes }),
        ...(input.categories !== undefined && { categories: input.categories ?? [] }),
        ...(input.entityUrn !== undefined && { entityUrn: input.entityUrn }),
        ...(input.actorUrn !== undefined && { actorUrn: input.actorUrn }),
        ...(input.testUrn !== undefined && { testUrn: input.testUrn }),
        ...(input.description !== undefined && { description: input.description }),
        ...(input.active != null && { active: input.active, disabledReason: null }),
        // The owner's own edit is made through its current token: deliveries are bounded by that one from now on.
        ...(own && { ownerTokenId: actor.tokenId ?? null }),
      };
      const updated = await updateWebhookSubscription(tx, id, data);
      await recordAudit(tx, actor, "webhook.update", webhookUrnOf(this.config.URN_NAMESPACE, id), {
        ownerUrn: found.ownerUrn,
        changed: Object.keys(data).filter((k) => k !== "ownerTokenId" && k !== "disabledReason"),
        ...(input.url != null && { host: new URL(input.url).host }),
      });
      return updated;
    });
    return view(this.config.URN_NAMESPACE, row);
  }

  async delete(actor: Actor, args: unknown): Promise<boolean> {
    const { id } = parseArgs(idArgs, args);
    return inPrismaTransaction(this.db.prisma, async (tx) => {
      const found = await this.mayChange(actor, await findWebhookSubscription(tx, id), "delete");
      await deleteWebhookSubscription(tx, id);
      await recordAudit(tx, actor, "webhook.delete", webhookUrnOf(this.config.URN_NAMESPACE, id), {
        ownerUrn: found.ownerUrn,
      });
      return true;
    });
  }

  async listDeliveries(actor: Actor, args: unknown): Promise<{ total: number; deliveries: WebhookDeliveryRow[] }> {
    const input = parseArgs(deliveriesArgs, args).input;
    await this.mayChange(actor, await findWebhookSubscription(this.db.prisma, input.subscriptionId), "view");
    const { total, rows } = await listWebhookDeliveries(this.db.pool, input.subscriptionId, {
      status: input.status ?? null,
      start: input.start,
      count: input.count,
    });
    return { total, deliveries: rows };
  }

  /**
   * replayWebhookDeliveries: the chosen deliveries (by id, or every one since a time; at most `limit`, one per event)
   * are sent again as new deliveries carrying the same event ids and bodies, each signed afresh, and read again for
   * the owner at delivery (an event it may no longer read is skipped).
   */
  async replay(actor: Actor, args: unknown): Promise<{ replayed: number; deliveryIds: string[] }> {
    const input = parseArgs(replayArgs, args).input;
    const ids = await inPrismaTransaction(this.db.prisma, async (tx) => {
      const found = await this.mayChange(actor, await findWebhookSubscription(tx, input.subscriptionId), "replay");
      if (!found.active) {
        throw conflict(`Webhook subscription ${input.subscriptionId} is turned off: turn it on (active: true) first`);
      }
      const { ids, pendingReplays } = await replayWebhookDeliveries(tx, input.subscriptionId, {
        deliveryIds: input.deliveryIds ?? null,
        since: input.since == null ? null : new Date(input.since),
        limit: input.limit,
      });
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
    // After the commit; a job that fails to queue is queued by the workers' reconcile (within a minute).
    const options = webhookDeliveryOptions(this.config.WEBHOOK_MAX_ATTEMPTS, this.config.WEBHOOK_RETRY_BASE_MS);
    const queued = await Promise.allSettled(ids.map((id) => this.deliveries.enqueue(id, { deliveryId: id }, options)));
    const lost = queued.filter((q) => q.status === "rejected").length;
    if (lost > 0) this.logger.warn({ lost }, "replayed webhook deliveries left to the reconcile: their enqueue failed");
    return { replayed: ids.length, deliveryIds: ids };
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
