import type { Command } from "commander";
import { apiClient, globalsOf, oneOf, resolveMe, wholeNumber } from "../options";
import { formatTime, printJson, printLine, printRecord, printTable } from "../output";

const DURATIONS = [
  "ONE_HOUR",
  "ONE_DAY",
  "ONE_WEEK",
  "ONE_MONTH",
  "THREE_MONTHS",
  "SIX_MONTHS",
  "ONE_YEAR",
  "NO_EXPIRY",
] as const;

interface TokenMetadata {
  urn: string;
  id: string;
  name: string;
  description: string | null;
  actorUrn: string;
  ownerUrn: string;
  createdAt: number;
  expiresAt: number | null;
  lastUsedAt: number | null;
}

const METADATA_FIELDS = "urn id name description actorUrn ownerUrn createdAt expiresAt lastUsedAt";

export function registerTokens(program: Command): void {
  const tokens = program.command("tokens").description("personal access tokens: create, list, revoke");

  tokens
    .command("create")
    .description("create an access token; it is shown once, never again")
    .requiredOption("--name <name>", "what the token is for (1-256 characters)")
    .option("--description <text>", "a longer description (at most 2000 characters)")
    .option(
      "--duration <duration>",
      `how long it lives: ${DURATIONS.join(", ")} (NO_EXPIRY only where the server allows it)`,
      oneOf(DURATIONS),
      "ONE_MONTH",
    )
    .option("--actor <urn>", "the user the token acts for (needs MANAGE_ACCESS_TOKENS unless it is you)", "me")
    .action(
      async (options: { name: string; description?: string; duration: string; actor: string }, command: Command) => {
        const client = apiClient();
        const actorUrn = await resolveMe(client, options.actor);
        const { createAccessToken: created } = await client.graphql<{
          createAccessToken: { accessToken: string; metadata: TokenMetadata };
        }>(
          `mutation($input: GetAccessTokenInput!) { createAccessToken(input: $input) { accessToken metadata { ${METADATA_FIELDS} } } }`,
          {
            input: {
              type: "PERSONAL",
              actorUrn,
              duration: options.duration,
              name: options.name,
              description: options.description,
            },
          },
        );
        if (globalsOf(command).json) return printJson(created);
        const m = created.metadata;
        printRecord([
          ["id", m.id],
          ["name", m.name],
          ["actor", m.actorUrn],
          ["expires", m.expiresAt === null ? "never" : formatTime(m.expiresAt)],
        ]);
        printLine("the token (shown once: store it now):");
        printLine(created.accessToken);
      },
    );

  tokens
    .command("list")
    .description("list live access tokens, newest first")
    .option("--actor <urn>", "only tokens acting for this user ('me' for yourself)")
    .option("--owner <urn>", "only tokens this user created ('me' for yourself)")
    .option("--name <name>", "only tokens of this name")
    .option("--start <n>", "skip this many", wholeNumber(0, 1_000_000_000), 0)
    .option("--count <n>", "list at most this many (1-1000)", wholeNumber(1, 1000), 20)
    .addHelpText(
      "after",
      "\nWithout MANAGE_ACCESS_TOKENS you may list only your own tokens: mdp tokens list --owner me",
    )
    .action(
      async (
        options: { actor?: string; owner?: string; name?: string; start: number; count: number },
        command: Command,
      ) => {
        const client = apiClient();
        const filters = [
          ["actorUrn", await resolveMe(client, options.actor)],
          ["ownerUrn", await resolveMe(client, options.owner)],
          ["name", options.name],
        ]
          .filter(([, value]) => value !== undefined)
          .map(([field, value]) => ({ field, value }));
        const { listAccessTokens: page } = await client.graphql<{
          listAccessTokens: { start: number; count: number; total: number; tokens: TokenMetadata[] };
        }>(
          `query($input: ListAccessTokenInput!) { listAccessTokens(input: $input) { start count total tokens { ${METADATA_FIELDS} } } }`,
          { input: { start: options.start, count: options.count, filters } },
        );
        if (globalsOf(command).json) return printJson(page);
        printTable(
          ["id", "name", "actor", "owner", "created", "expires", "last used"],
          page.tokens.map((t) => [
            t.id,
            t.name,
            t.actorUrn,
            t.ownerUrn,
            formatTime(t.createdAt),
            t.expiresAt === null ? "never" : formatTime(t.expiresAt),
            formatTime(t.lastUsedAt),
          ]),
        );
        printLine(pageLine(page.start, page.tokens.length, page.total, "tokens"));
      },
    );

  tokens
    .command("revoke")
    .description("revoke an access token at once, on every gateway replica")
    .argument("<tokenId>", "the token's id (mdp tokens list)")
    .action(async (tokenId: string, _options: unknown, command: Command) => {
      await apiClient().graphql("mutation($id: String!) { revokeAccessToken(tokenId: $id) }", { id: tokenId });
      if (globalsOf(command).json) printJson({ tokenId, revoked: true });
      else printLine(`revoked token ${tokenId}`);
    });
}

/** `showing 1-20 of 45 tokens`. */
export function pageLine(start: number, shown: number, total: number, what: string): string {
  if (shown === 0) return total === 0 ? `no ${what}` : `no ${what} from ${start + 1} on (${total} in all)`;
  return `showing ${start + 1}-${start + shown} of ${total} ${what}`;
}
