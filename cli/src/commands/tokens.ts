import type { Command } from "commander";
import { CliError, EXIT } from "../exit-codes";
import { apiClient, globalsOf, oneOf, resolveMe, wholeNumber } from "../options";
import type {
  AccessTokenDuration,
  CreateAccessTokenMutation,
  CreateAccessTokenMutationVariables,
  ListAccessTokensQuery,
  ListAccessTokensQueryVariables,
  RevokeAccessTokenMutation,
  RevokeAccessTokenMutationVariables,
  RevokeAccessTokensMutation,
  RevokeAccessTokensMutationVariables,
  RotateAccessTokenMutation,
  RotateAccessTokenMutationVariables,
  AccessTokenUsageQuery,
  AccessTokenUsageQueryVariables,
} from "../generated/graphql";
import {
  ACCESS_TOKEN_USAGE,
  ROTATE_ACCESS_TOKEN,
  CREATE_ACCESS_TOKEN,
  LIST_ACCESS_TOKENS,
  REVOKE_ACCESS_TOKEN,
  REVOKE_ACCESS_TOKENS,
} from "../graphql-operations/tokens";
import { credentials } from "../config";
import { counted, formatCount, formatTime, printJson, printLine, printRecord, printTable } from "../output";
import { confirmDestructive, YES_HELP } from "../terminal";
import { defaultLifetime } from "../token-lifetime";

export const DURATIONS = [
  "ONE_HOUR",
  "ONE_DAY",
  "ONE_WEEK",
  "ONE_MONTH",
  "THREE_MONTHS",
  "SIX_MONTHS",
  "ONE_YEAR",
  "NO_EXPIRY",
] as const satisfies readonly AccessTokenDuration[];

/** A token's scopes for a table: `all` when unscoped. */
export const scopesText = (scopes: string[] | null) => (scopes === null ? "all" : scopes.join(", "));

export function registerTokens(program: Command): void {
  const tokens = program
    .command("tokens")
    .description(
      "personal access tokens: create (optionally scoped), list, rotate, show what one is used for, revoke one or all of a user's",
    );

  tokens
    .command("create")
    .description("create an access token; it is shown once, never again")
    .requiredOption("--name <name>", "what the token is for (1-256 characters)")
    .option("--description <text>", "a longer description (at most 2000 characters)")
    .option(
      "--duration <duration>",
      `how long it lives: ${DURATIONS.join(", ")} (NO_EXPIRY only where the server allows it); without it, ` +
        "a month, or the longest that ends before the token you are logged in with",
      oneOf(DURATIONS),
    )
    .option("--actor <urn>", "the user the token acts for (needs MANAGE_ACCESS_TOKENS unless it is you)", "me")
    .option(
      "--scope <privilege...>",
      "limit the token to these of the actor's privileges (e.g. GET_ENTITY VIEW_TESTS); 1-32 names, each held by the actor",
    )
    .addHelpText(
      "after",
      "\nWithout --scope the token has all of the actor's privileges, or, when you are logged in with a scoped token, " +
        "that token's scopes.\nExample: mdp tokens create --name dashboards --scope GET_ENTITY VIEW_TESTS",
    )
    .action(
      async (
        options: {
          name: string;
          description?: string;
          duration?: AccessTokenDuration;
          actor: string;
          scope?: string[];
        },
        command: Command,
      ) => {
        const client = apiClient();
        const lifetime = chosenLifetime(options.duration, command);
        const actorUrn = await resolveMe(client, options.actor);
        const { createAccessToken: created } = await client.graphql<
          CreateAccessTokenMutation,
          CreateAccessTokenMutationVariables
        >(CREATE_ACCESS_TOKEN, {
          input: {
            type: "PERSONAL",
            actorUrn: actorUrn!,
            duration: lifetime,
            name: options.name,
            description: options.description,
            scopes: options.scope,
          },
        });
        printCreatedToken(created, globalsOf(command).json);
      },
    );

  tokens
    .command("list")
    .description("list live access tokens, newest first")
    .option("--actor <urn>", "only tokens acting for this user ('me' for yourself)")
    .option("--owner <urn>", "only tokens this user created ('me' for yourself)")
    .option("--name <name>", "only tokens of this name")
    .option(
      "--unused-days <n>",
      "only tokens neither used nor created in the last n days (1-36500)",
      wholeNumber(1, 36_500),
    )
    .option("--start <n>", "skip this many", wholeNumber(0, 1_000_000_000), 0)
    .option("--count <n>", "list at most this many (1-1000)", wholeNumber(1, 1000), 20)
    .addHelpText(
      "after",
      "\nWithout MANAGE_ACCESS_TOKENS you may list only your own tokens: mdp tokens list --owner me",
    )
    .action(
      async (
        options: { actor?: string; owner?: string; name?: string; unusedDays?: number; start: number; count: number },
        command: Command,
      ) => {
        const client = apiClient();
        const filters = (
          [
            ["actorUrn", await resolveMe(client, options.actor)],
            ["ownerUrn", await resolveMe(client, options.owner)],
            ["name", options.name],
            ["unusedForDays", options.unusedDays?.toString()],
          ] as const
        )
          .filter(([, value]) => value !== undefined)
          .map(([field, value]) => ({ field, value }));
        const { listAccessTokens: page } = await client.graphql<ListAccessTokensQuery, ListAccessTokensQueryVariables>(
          LIST_ACCESS_TOKENS,
          { input: { start: options.start, count: options.count, filters } },
        );
        if (globalsOf(command).json) return printJson(page);
        printTable(
          ["id", "name", "actor", "owner", "scopes", "created", "expires", "last used"],
          page.tokens.map((t) => [
            t.id,
            t.name,
            t.actorUrn,
            t.ownerUrn,
            scopesText(t.scopes),
            formatTime(t.createdAt),
            t.expiresAt === null ? "never" : formatTime(t.expiresAt),
            formatTime(t.lastUsedAt),
          ]),
          { shorten: ["name", "scopes"] },
        );
        printLine(pageLine(page.start, page.tokens.length, page.total, "tokens"));
      },
    );

  tokens
    .command("revoke")
    .description("revoke an access token at once, on every gateway replica")
    .argument("<tokenId>", "the token's id (mdp tokens list)")
    .option("-y, --yes", YES_HELP)
    .action(async (tokenId: string, options: { yes?: boolean }, command: Command) => {
      const client = apiClient();
      await confirmDestructive(`revoke access token ${tokenId}`, options);
      await client.graphql<RevokeAccessTokenMutation, RevokeAccessTokenMutationVariables>(REVOKE_ACCESS_TOKEN, {
        id: tokenId,
      });
      if (globalsOf(command).json) printJson({ tokenId, revoked: true });
      else printLine(`revoked token ${tokenId}`);
    });

  tokens
    .command("rotate")
    .description("mint a successor of an access token (same name, scopes, lifetime); it is shown once, never again")
    .argument("<tokenId>", "the token's id (mdp tokens list); a token may rotate itself")
    .option(
      "--grace <seconds>",
      "how long the old token keeps working (0-86400); used after that, it revokes its successors too",
      wholeNumber(0, 86_400),
      0,
    )
    .addHelpText(
      "after",
      "\nRotating a token you are logged in with needs no privilege; another of yours needs " +
        "GENERATE_PERSONAL_ACCESS_TOKENS, another user's MANAGE_ACCESS_TOKENS.\n" +
        "Example (automation renewing its own token): mdp tokens rotate $TOKEN_ID --grace 300",
    )
    .action(async (tokenId: string, options: { grace: number }, command: Command) => {
      const { rotateAccessToken: rotated } = await apiClient().graphql<
        RotateAccessTokenMutation,
        RotateAccessTokenMutationVariables
      >(ROTATE_ACCESS_TOKEN, { id: tokenId, grace: options.grace });
      if (globalsOf(command).json) return printJson(rotated);
      const m = rotated.metadata;
      printRecord([
        ["id", m.id],
        ["rotated from", m.rotatedFromId ?? tokenId],
        ["name", m.name],
        ["actor", m.actorUrn],
        ["scopes", scopesText(m.scopes)],
        ["expires", m.expiresAt === null ? "never" : formatTime(m.expiresAt)],
        ["old token works", options.grace === 0 ? "no longer" : `for ${options.grace} more seconds`],
      ]);
      printLine("the token (shown once: store it now):");
      printLine(rotated.accessToken);
    });

  tokens
    .command("usage")
    .description("what an access token is used for: its last clients, and requests by operation over 30 days")
    .argument("<tokenId>", "the token's id (mdp tokens list)")
    .action(async (tokenId: string, _options: unknown, command: Command) => {
      const { listAccessTokens: page } = await apiClient().graphql<
        AccessTokenUsageQuery,
        AccessTokenUsageQueryVariables
      >(ACCESS_TOKEN_USAGE, { input: { count: 1, filters: [{ field: "id", value: tokenId }] } });
      const token = page.tokens[0];
      if (!token) throw new CliError(`no live access token ${tokenId} (mdp tokens list)`, EXIT.NOT_FOUND);
      if (globalsOf(command).json) return printJson(token);
      printRecord([
        ["id", token.id],
        ["name", token.name],
        ["actor", token.actorUrn],
        ["last used", formatTime(token.lastUsedAt)],
        ...(token.rotatedToId
          ? [["rotated into", `${token.rotatedToId} at ${formatTime(token.rotatedAt)}`] as [string, string]]
          : []),
        ["requests (30 days)", formatCount(token.usage.total)],
      ]);
      printTable(
        ["client address", "user agent", "last seen"],
        token.usage.clients.map((c) => [c.ip, c.userAgent, formatTime(c.lastSeenAt)]),
        { shorten: ["user agent"] },
      );
      printTable(
        ["operation", "requests (30 days)"],
        token.usage.operations.map((o) => [o.operation, formatCount(o.count)]),
      );
    });

  tokens
    .command("revoke-all")
    .description("revoke every live token of a user at once, on every gateway replica; prints how many")
    .argument("<actorUrn>", "the user whose tokens to revoke ('me' for yourself, which ends this login too)")
    .option("-y, --yes", YES_HELP)
    .addHelpText("after", "\nRevoking another user's tokens needs MANAGE_ACCESS_TOKENS.")
    .action(async (actor: string, options: { yes?: boolean }, command: Command) => {
      const client = apiClient();
      const actorUrn = (await resolveMe(client, actor))!;
      const yours = actor === "me" ? " (the one you are logged in with among them)" : "";
      await confirmDestructive(`revoke every live token of ${actorUrn}${yours}`, options);
      const { revokeAccessTokens: revoked } = await client.graphql<
        RevokeAccessTokensMutation,
        RevokeAccessTokensMutationVariables
      >(REVOKE_ACCESS_TOKENS, { a: actorUrn });
      if (globalsOf(command).json) printJson({ actorUrn, revoked });
      else printLine(`revoked ${counted(revoked, "token")} of ${actorUrn}`);
    });
}

/** A token just created: its metadata, then the token itself, shown this once (or the answer as JSON). */
export function printCreatedToken(
  created: CreateAccessTokenMutation["createAccessToken"] | null,
  json?: boolean,
): void {
  // null only beside an error, which client.graphql has thrown
  if (!created) throw new CliError("the server created no token", EXIT.SERVER);
  if (json) return printJson(created);
  const m = created.metadata;
  printRecord([
    ["id", m.id],
    ["name", m.name],
    ["actor", m.actorUrn],
    ["scopes", scopesText(m.scopes)],
    ["expires", m.expiresAt === null ? "never" : formatTime(m.expiresAt)],
  ]);
  printLine("the token (shown once: store it now):");
  printLine(created.accessToken);
}

/**
 * The lifetime to mint with: --duration, or the default that fits within the login token (token-lifetime.ts), said
 * on stderr when chosen (stdout stays the token, or with --json one JSON document).
 */
export function chosenLifetime(given: AccessTokenDuration | undefined, command: Command): AccessTokenDuration {
  if (given !== undefined) return given;
  const { duration, why } = defaultLifetime(credentials().token);
  const line = `lifetime: ${duration} (${why}; --duration sets another)`;
  if (globalsOf(command).json) process.stderr.write(`${line}\n`);
  else printLine(line);
  return duration;
}

/** `showing 1-20 of 45 tokens`, `showing 1-1 of 1 token`: `what` is the plural, `one` the singular if not `what` less its s. */
export function pageLine(
  start: number,
  shown: number,
  total: number,
  what: string,
  one = what.replace(/s$/, ""),
): string {
  if (shown === 0)
    return total === 0 ? `no ${what}` : `no ${what} from ${formatCount(start + 1)} on (${formatCount(total)} in all)`;
  return `showing ${formatCount(start + 1)}-${formatCount(start + shown)} of ${counted(total, one, what)}`;
}
