import { z } from "zod";
import { badInput, ENTITY_CHANGE_CATEGORIES, makeUrn, MAX_EPOCH_MS, PLATFORM_EVENT_TYPES } from "@mdp/core";
import { WEBHOOK_LIMITS, type WebhookSubscriptionHealth, type WebhookSubscriptionRow } from "@mdp/db";
import { pageFields } from "../shared/paging";
import { rule, said, textField, urnField, wholeNumberField } from "../shared/validate";

/*
 * The webhook operations' contracts (their arguments, the subscription's url and filters), the subscription as
 * answered, and who may act on another user's subscriptions.
 */

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

export const createArgs = z.object({
  input: z.object({ url: urlField, eventTypes: eventTypesField, ...filterFields }),
});
export const updateArgs = z.object({
  input: z.object({
    id: z.string().uuid(said((at) => `${at} must be a subscription id (a UUID)`)),
    url: urlField.nullish(),
    eventTypes: eventTypesField.nullish(),
    active: z.boolean().nullish(),
    ...filterFields,
  }),
});
export const idArgs = z.object({ id: z.string().uuid(said((at) => `${at} must be a subscription id (a UUID)`)) });
/** rotateWebhookSecret's longest overlap: 7 days, as Svix allows. */
export const MAX_SECRET_OVERLAP_SECONDS = 604_800;
export const rotateArgs = z.object({
  id: z.string().uuid(said((at) => `${at} must be a subscription id (a UUID)`)),
  overlapSeconds: z
    .number()
    .int(said((at) => `${at} must be a whole number of seconds`))
    .min(
      0,
      said((at) => `${at} must be at least 0`),
    )
    .max(
      MAX_SECRET_OVERLAP_SECONDS,
      said((at) => `${at} must be at most ${MAX_SECRET_OVERLAP_SECONDS} (7 days)`),
    ),
});
export const listArgs = z.object({
  input: z
    .object({
      ...pageFields,
      ownerUrn: urnField("corpuser").nullish(),
      all: z.boolean().nullish(),
    })
    .nullish()
    .transform((i) => i ?? { start: 0, count: 20, ownerUrn: null, all: null }),
});
export const deliveriesArgs = z.object({
  input: z.object({
    subscriptionId: z.string().uuid(said((at) => `${at} must be a subscription id (a UUID)`)),
    status: z.enum(DELIVERY_STATUSES).nullish(),
    start: pageFields.start,
    count: wholeNumberField(0, WEBHOOK_LIMITS.maxPage, 20),
  }),
});
export const replayArgs = z.object({
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
  /** CLOSED, or OPEN (deliveries paused: one probe at nextProbeAt) */
  circuit: { state: string; openedAt: number | null; nextProbeAt: number | null };
  consecutiveFailures: number;
  failingSince: number | null;
  droppedDeliveries: number;
  previousSecretExpiresAt: number | null;
  createdAt: number;
  updatedAt: number;
}

const ms = (d: Date | null) => (d === null ? null : d.getTime());

export const view = (
  namespace: string,
  row: WebhookSubscriptionRow & WebhookSubscriptionHealth,
): WebhookSubscriptionView => ({
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
  circuit: {
    state: row.circuitState,
    openedAt: ms(row.circuitOpenedAt),
    nextProbeAt: ms(row.circuitNextProbeAt),
  },
  consecutiveFailures: row.consecutiveFailures,
  failingSince: ms(row.failingSince),
  droppedDeliveries: Number(row.droppedDeliveries),
  previousSecretExpiresAt:
    row.previousSecretExpiresAt && row.previousSecretExpiresAt.getTime() > Date.now()
      ? row.previousSecretExpiresAt.getTime()
      : null,
  createdAt: row.createdAt.getTime(),
  updatedAt: row.updatedAt.getTime(),
});
