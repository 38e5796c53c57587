import type { Command } from "commander";
import { apiClient, globalsOf, oneOf, wholeNumber } from "../options";
import type {
  CreateWebhookMutation,
  CreateWebhookMutationVariables,
  DeleteWebhookMutation,
  DeleteWebhookMutationVariables,
  ListWebhookDeliveriesQuery,
  ListWebhookDeliveriesQueryVariables,
  ListWebhooksQuery,
  ListWebhooksQueryVariables,
  ReplayWebhookDeliveriesMutation,
  ReplayWebhookDeliveriesMutationVariables,
  RotateWebhookSecretMutation,
  RotateWebhookSecretMutationVariables,
  UpdateWebhookMutation,
  UpdateWebhookMutationVariables,
} from "../generated/graphql";
import {
  CREATE_WEBHOOK,
  DELETE_WEBHOOK,
  LIST_WEBHOOK_DELIVERIES,
  LIST_WEBHOOKS,
  REPLAY_WEBHOOK_DELIVERIES,
  ROTATE_WEBHOOK_SECRET,
  UPDATE_WEBHOOK,
} from "../graphql-operations/webhooks";
import { INSTANT_HELP, parseInstant } from "../instants";
import { counted, formatCount, formatTime, printJson, printLine, printRecord, printTable } from "../output";
import { confirmDestructive, YES_HELP } from "../terminal";

const EVENT_TYPES = ["MetadataChangeLog_v1", "EntityChangeEvent_v1"] as const;
const CATEGORIES = ["ACCESS_TOKEN", "TASK", "TEST_RESULT", "SCHEDULE"] as const;
const STATUSES = ["PENDING", "DELIVERED", "FAILED", "SKIPPED"] as const;

type Subscription = ListWebhooksQuery["listWebhookSubscriptions"]["subscriptions"][number];

/** What a subscription is narrowed to, for a table: `any` when nothing narrows it. */
const filtersText = (s: Subscription) =>
  [
    s.categories.length ? s.categories.join(",") : undefined,
    s.entityUrn && `entity ${s.entityUrn}`,
    s.actorUrn && `actor ${s.actorUrn}`,
    s.testUrn && `test ${s.testUrn}`,
  ]
    .filter(Boolean)
    .join("; ") || "any";

const subscriptionRecord = (s: Subscription): Array<[string, string]> => [
  ["id", s.id],
  ["url", s.url],
  ["events", s.eventTypes.join(", ")],
  ["only", filtersText(s)],
  ["owner", s.ownerUrn],
  ["active", s.active ? "yes" : `no${s.disabledReason ? ` (${s.disabledReason})` : ""}`],
];

/** `mdp webhooks`: signed deliveries of platform events to your endpoints (docs/webhooks.md). */
export function registerWebhooks(program: Command): void {
  const webhooks = program
    .command("webhooks")
    .description("webhook subscriptions: create, list, turn on or off, delete; the delivery log and replays");

  webhooks
    .command("create")
    .description("subscribe an endpoint to platform events; the signing secret is shown once, never again")
    .argument("<url>", "where to POST each event (http or https; in production not a private address)")
    .option("--event-type <type...>", `which events: ${EVENT_TYPES.join(", ")}`, [...EVENT_TYPES])
    .option("--category <category...>", `only these EntityChangeEvent_v1 categories: ${CATEGORIES.join(", ")}`)
    .option("--entity <urn>", "only events about this entity")
    .option("--actor <urn>", "only events about this user, or made by it")
    .option("--test <urn>", "only events about this test (its definition, or an entity's result of it)")
    .option("--description <text>", "what it is for (at most 512 characters)")
    .addHelpText(
      "after",
      "\nYou receive only what you may read when each event is delivered. Verify each delivery's mdp-signature with " +
        "the secret (docs/webhooks.md).\nExample: mdp webhooks create https://hooks.example.com/mdp " +
        "--event-type EntityChangeEvent_v1 --category TASK",
    )
    .action(
      async (
        url: string,
        options: {
          eventType: string[];
          category?: string[];
          entity?: string;
          actor?: string;
          test?: string;
          description?: string;
        },
        command: Command,
      ) => {
        const { createWebhookSubscription: created } = await apiClient().graphql<
          CreateWebhookMutation,
          CreateWebhookMutationVariables
        >(CREATE_WEBHOOK, {
          input: {
            url,
            eventTypes: options.eventType,
            categories: options.category,
            entityUrn: options.entity,
            actorUrn: options.actor,
            testUrn: options.test,
            description: options.description,
          },
        });
        if (globalsOf(command).json) return printJson(created);
        printRecord(subscriptionRecord(created.subscription));
        printLine("the signing secret (shown once: store it where your receiver reads it):");
        printLine(created.secret);
      },
    );

  webhooks
    .command("list")
    .description("list your webhook subscriptions, newest first")
    .option("--owner <urn>", "another user's (needs MANAGE_SYSTEM_OPERATIONS)")
    .option("--all", "everyone's (needs MANAGE_SYSTEM_OPERATIONS)")
    .option("--start <n>", "skip this many", wholeNumber(0, 1_000_000_000), 0)
    .option("--count <n>", "list at most this many (1-1000)", wholeNumber(1, 1000), 20)
    .action(async (options: { owner?: string; all?: boolean; start: number; count: number }, command: Command) => {
      const { listWebhookSubscriptions: page } = await apiClient().graphql<
        ListWebhooksQuery,
        ListWebhooksQueryVariables
      >(LIST_WEBHOOKS, {
        input: { ownerUrn: options.owner, all: options.all, start: options.start, count: options.count },
      });
      if (globalsOf(command).json) return printJson(page);
      printTable(
        ["id", "url", "events", "only", "owner", "active", "created"],
        page.subscriptions.map((s) => [
          s.id,
          s.url,
          s.eventTypes.join(", "),
          filtersText(s),
          s.ownerUrn,
          s.active ? "yes" : "no",
          formatTime(s.createdAt),
        ]),
        { shorten: ["events", "only"] },
      );
      printLine(`${formatCount(page.subscriptions.length)} of ${counted(page.total, "subscription")}`);
    });

  for (const [name, active] of [
    ["enable", true],
    ["disable", false],
  ] as const) {
    webhooks
      .command(name)
      .description(active ? "turn a subscription on again" : "turn a subscription off: nothing is delivered until on")
      .argument("<id>", "the subscription's id (mdp webhooks list)")
      .action(async (id: string, _options: unknown, command: Command) => {
        const { updateWebhookSubscription: updated } = await apiClient().graphql<
          UpdateWebhookMutation,
          UpdateWebhookMutationVariables
        >(UPDATE_WEBHOOK, { input: { id, active } });
        if (globalsOf(command).json) return printJson(updated);
        printLine(`subscription ${id} is ${updated.active ? "on" : "off"}`);
      });
  }

  webhooks
    .command("delete")
    .description("delete a subscription and its delivery log")
    .argument("<id>", "the subscription's id (mdp webhooks list)")
    .option("-y, --yes", YES_HELP)
    .action(async (id: string, options: { yes?: boolean }, command: Command) => {
      const client = apiClient();
      await confirmDestructive(`delete webhook subscription ${id} and its delivery log`, options);
      await client.graphql<DeleteWebhookMutation, DeleteWebhookMutationVariables>(DELETE_WEBHOOK, { id });
      if (globalsOf(command).json) printJson({ id, deleted: true });
      else printLine(`deleted subscription ${id}`);
    });

  webhooks
    .command("rotate-secret")
    .description("a new signing secret, shown once; the previous one signs deliveries too for --overlap seconds")
    .argument("<id>", "the subscription's id (mdp webhooks list; your own)")
    .option("--overlap <seconds>", "how long both secrets sign (0-604800, 7 days)", wholeNumber(0, 604_800), 86_400)
    .addHelpText(
      "after",
      "\nExample: mdp webhooks rotate-secret <id> --overlap 3600   (0: the old secret stops at once)",
    )
    .action(async (id: string, options: { overlap: number }, command: Command) => {
      const { rotateWebhookSecret: rotated } = await apiClient().graphql<
        RotateWebhookSecretMutation,
        RotateWebhookSecretMutationVariables
      >(ROTATE_WEBHOOK_SECRET, { id, overlapSeconds: options.overlap });
      if (globalsOf(command).json) return printJson(rotated);
      const until = rotated.subscription.previousSecretExpiresAt;
      printLine(
        until ? `the previous secret signs too until ${formatTime(until)}` : "the previous secret signs no more",
      );
      printLine("the new signing secret (shown once: store it where your receiver reads it):");
      printLine(rotated.secret);
    });

  webhooks
    .command("deliveries")
    .description(
      "a subscription's delivery log, newest first: each event's status, attempts, last response and, while pending, " +
        "when its next attempt is",
    )
    .argument("<id>", "the subscription's id (mdp webhooks list)")
    .option("--status <status>", `only ${STATUSES.join(", ")}`, oneOf(STATUSES))
    .option("--start <n>", "skip this many", wholeNumber(0, 1_000_000_000), 0)
    .option("--count <n>", "list at most this many (1-500)", wholeNumber(1, 500), 20)
    .action(async (id: string, options: { status?: string; start: number; count: number }, command: Command) => {
      const { listWebhookDeliveries: page } = await apiClient().graphql<
        ListWebhookDeliveriesQuery,
        ListWebhookDeliveriesQueryVariables
      >(LIST_WEBHOOK_DELIVERIES, {
        input: { subscriptionId: id, status: options.status, start: options.start, count: options.count },
      });
      if (globalsOf(command).json) return printJson(page);
      printTable(
        ["delivery", "event", "type", "status", "attempts", "response", "next attempt", "error", "created"],
        page.deliveries.map((d) => [
          d.id,
          d.generation ? `${d.eventId} (replay ${d.generation})` : d.eventId,
          d.eventType,
          d.status,
          d.attempts,
          d.responseStatus ?? "-",
          d.nextAttemptAt == null ? "-" : formatTime(d.nextAttemptAt),
          d.error ?? "",
          formatTime(d.createdAt),
        ]),
        { shorten: ["error"] },
      );
      printLine(`${formatCount(page.deliveries.length)} of ${counted(page.total, "delivery", "deliveries")}`);
    });

  webhooks
    .command("replay")
    .description("send deliveries again, with the same event ids (receivers deduplicate on mdp-event-id)")
    .argument("<id>", "the subscription's id (mdp webhooks list)")
    .option("--since <instant>", `every delivery created since: ${INSTANT_HELP}`)
    .option("--delivery <deliveryId...>", "these deliveries (mdp webhooks deliveries; at most 1000)")
    .option("--limit <n>", "at most this many events, oldest first (1-1000)", wholeNumber(1, 1000))
    .addHelpText("after", "\nExample: mdp webhooks replay <id> --since 2h")
    .action(async (id: string, options: { since?: string; delivery?: string[]; limit?: number }, command: Command) => {
      const since = options.since === undefined ? undefined : parseInstant("--since", options.since);
      const { replayWebhookDeliveries: replayed } = await apiClient().graphql<
        ReplayWebhookDeliveriesMutation,
        ReplayWebhookDeliveriesMutationVariables
      >(REPLAY_WEBHOOK_DELIVERIES, {
        input: { subscriptionId: id, since, deliveryIds: options.delivery, limit: options.limit },
      });
      if (globalsOf(command).json) return printJson(replayed);
      printLine(`replaying ${counted(replayed.replayed, "delivery", "deliveries")}`);
    });
}
