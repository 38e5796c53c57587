import { InvalidArgumentError, type Command } from "commander";
import type { ListPlatformEventsQuery, ListPlatformEventsQueryVariables } from "../generated/graphql";
import { LIST_PLATFORM_EVENTS } from "../graphql-operations/platform-events";
import { apiClient, globalsOf, oneOf, wholeNumber } from "../options";
import { formatTime, printJson, printLine, printTable } from "../output";

/** docs/events.md: the categories of EntityChangeEvent_v1 and the two event types (the gateway refuses others too). */
const CATEGORIES = ["ACCESS_TOKEN", "TASK", "TEST_RESULT", "SCHEDULE"] as const;
const EVENT_TYPES = ["MetadataChangeLog_v1", "EntityChangeEvent_v1"] as const;

const collect =
  <T extends string>(parse: (value: string) => T) =>
  (value: string, previous: T[] | undefined): T[] => [...(previous ?? []), parse(value)];

export function registerEvents(program: Command): void {
  const events = program
    .command("events")
    .description("platform events: tokens, tasks, test results and schedules, read as a stream with a cursor");

  events
    .command("list")
    .description("the events after a position that you may read, oldest first, and the position to read from next")
    .option(
      "--since <seq>",
      "read after this position: the 'next' a previous list printed (default: the oldest kept)",
      position,
    )
    .option("--count <n>", "at most this many events (1-1000)", wholeNumber(1, 1000), 100)
    .option(
      "--category <name>",
      `only this category (${CATEGORIES.join(", ")}); repeatable`,
      collect(oneOf(CATEGORIES)),
    )
    .option(
      "--type <eventType>",
      `only this event type (${EVENT_TYPES.join(", ")}); repeatable`,
      collect(oneOf(EVENT_TYPES)),
    )
    .option("--urn <entityUrn>", "only events about this entity")
    .addHelpText(
      "after",
      `
Each event shown is one you may read now: your own tokens', tasks' and schedules' events, others by privilege
(docs/events.md "Who reads what"). Keep the printed 'next' and pass it as --since to read on from there.

Examples:
  mdp events list --category ACCESS_TOKEN
  mdp events list --since 57 --json`,
    )
    .action(
      async (
        options: { since?: string; count: number; category?: string[]; type?: string[]; urn?: string },
        command: Command,
      ) => {
        const { listPlatformEvents: page } = await apiClient().graphql<
          ListPlatformEventsQuery,
          ListPlatformEventsQueryVariables
        >(LIST_PLATFORM_EVENTS, {
          since: options.since ?? null,
          count: options.count,
          categories: options.category ?? null,
          eventTypes: options.type ?? null,
          entityUrn: options.urn ?? null,
        });
        if (globalsOf(command).json) {
          return printJson({ ...page, events: page.events.map((e) => ({ ...e, payload: JSON.parse(e.payload) })) });
        }
        printTable(
          ["seq", "at", "event", "entity", "about"],
          page.events.map((e) => [
            e.seq,
            formatTime(e.createdAt),
            e.category ? `${e.category} ${e.operation ?? ""}` : e.eventType,
            e.entityUrn,
            summary(e.payload),
          ]),
          { shorten: ["event", "about"] },
        );
        const missed =
          options.since !== undefined && page.oldest !== null && BigInt(options.since) + 1n < BigInt(page.oldest);
        printLine(
          `next: ${page.next}` +
            (page.oldest === null ? "" : ` (oldest kept: ${page.oldest})`) +
            (missed ? " — events after your --since were pruned before you read them" : ""),
        );
      },
    );
}

/** A stream position as the gateway answers it: digits. */
function position(value: string): string {
  if (!/^\d{1,18}$/.test(value)) throw new InvalidArgumentError("must be a position as 'next' printed it (digits).");
  return value;
}

/** An event's modifier or parameters, in a few words. */
function summary(payload: string): string {
  const record = JSON.parse(payload) as {
    modifier?: string;
    parameters?: Record<string, unknown>;
    aspectName?: string;
  };
  const words = [
    record.modifier,
    record.aspectName,
    ...Object.entries(record.parameters ?? {}).map(([k, v]) => `${k}=${Array.isArray(v) ? v.join(",") : String(v)}`),
  ].filter((w): w is string => w !== undefined);
  const text = words.join(" ");
  return text.length > 80 ? `${text.slice(0, 79)}…` : text;
}
