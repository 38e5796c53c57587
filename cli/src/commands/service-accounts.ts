import type { Command } from "commander";
import { apiClient, globalsOf, oneOf, wholeNumber } from "../options";
import type {
  AccessTokenDuration,
  CreateAccessTokenMutation,
  CreateAccessTokenMutationVariables,
  CreateServiceAccountMutation,
  CreateServiceAccountMutationVariables,
  DeleteServiceAccountMutation,
  DeleteServiceAccountMutationVariables,
  ListServiceAccountsQuery,
  ListServiceAccountsQueryVariables,
} from "../generated/graphql";
import {
  CREATE_SERVICE_ACCOUNT,
  DELETE_SERVICE_ACCOUNT,
  LIST_SERVICE_ACCOUNTS,
} from "../graphql-operations/service-accounts";
import { CREATE_ACCESS_TOKEN } from "../graphql-operations/tokens";
import { formatTime, printJson, printLine, printRecord, printTable } from "../output";
import { confirmDestructive, YES_HELP } from "../terminal";
import { chosenLifetime, DURATIONS, pageLine, printCreatedToken } from "./tokens";

const NEEDS = "\nEvery service-account command needs MANAGE_SERVICE_ACCOUNTS.";

/** `mdp service-accounts`: non-human users for automation, and the tokens they act through (docs/api.md). */
export function registerServiceAccounts(program: Command): void {
  const accounts = program
    .command("service-accounts")
    .description("service accounts (non-human users for automation): create, list, mint a token for one, delete");

  accounts
    .command("create")
    .description("create a service account; grant it privileges with mdp policies create --user <its urn>")
    .option("--display-name <name>", "a name to show (at most 256 characters)")
    .option("--description <text>", "what it is for (at most 2000 characters)")
    .addHelpText("after", `${NEEDS}\nExample: mdp service-accounts create --display-name "nightly ingestion"`)
    .action(async (options: { displayName?: string; description?: string }, command: Command) => {
      const { createServiceAccount: account } = await apiClient().graphql<
        CreateServiceAccountMutation,
        CreateServiceAccountMutationVariables
      >(CREATE_SERVICE_ACCOUNT, { input: { displayName: options.displayName, description: options.description } });
      if (globalsOf(command).json) return printJson(account);
      printRecord([
        ["urn", account.urn],
        ["display name", account.displayName ?? ""],
        ["created by", account.createdBy],
      ]);
      printLine(
        `next: grant it privileges (mdp policies create --name <name> --privilege <PRIVILEGE...> --user ${account.urn}), ` +
          `then mint its token (mdp service-accounts token ${account.urn} --name <name>)`,
      );
    });

  accounts
    .command("list")
    .description("list live service accounts, newest first")
    .option("--query <text>", "only accounts whose display name, name or description contains it")
    .option("--start <n>", "skip this many", wholeNumber(0, 1_000_000_000), 0)
    .option("--count <n>", "list at most this many (1-1000)", wholeNumber(1, 1000), 20)
    .addHelpText("after", NEEDS)
    .action(async (options: { query?: string; start: number; count: number }, command: Command) => {
      const { listServiceAccounts: page } = await apiClient().graphql<
        ListServiceAccountsQuery,
        ListServiceAccountsQueryVariables
      >(LIST_SERVICE_ACCOUNTS, { input: { start: options.start, count: options.count, query: options.query } });
      if (globalsOf(command).json) return printJson(page);
      printTable(
        ["urn", "display name", "created by", "created", "last used"],
        page.serviceAccounts.map((a) => [
          a.urn,
          a.displayName ?? "",
          a.createdBy,
          formatTime(a.createdAt),
          formatTime(a.lastUsedAt),
        ]),
        { shorten: ["display name"] },
      );
      printLine(pageLine(page.start, page.serviceAccounts.length, page.total, "service accounts"));
    });

  accounts
    .command("token")
    .description("mint an access token a service account acts through; it is shown once, never again")
    .argument("<urn>", "the service account's urn (mdp service-accounts list)")
    .requiredOption("--name <name>", "what the token is for (1-256 characters)")
    .option("--description <text>", "a longer description (at most 2000 characters)")
    .option(
      "--duration <duration>",
      `how long it lives: ${DURATIONS.join(", ")}; without it, a month, or the longest that ends before the token ` +
        "you are logged in with",
      oneOf(DURATIONS),
    )
    .option("--scope <privilege...>", "limit the token to these of the account's privileges (1-32 names)")
    .addHelpText(
      "after",
      `${NEEDS} The token holds at most what both the account and you hold now, checked at every use.\n` +
        "Example: mdp service-accounts token urn:li:corpuser:service_... --name ci --duration THREE_MONTHS",
    )
    .action(
      async (
        urn: string,
        options: { name: string; description?: string; duration?: AccessTokenDuration; scope?: string[] },
        command: Command,
      ) => {
        const client = apiClient();
        const lifetime = chosenLifetime(options.duration, command);
        const { createAccessToken: created } = await client.graphql<
          CreateAccessTokenMutation,
          CreateAccessTokenMutationVariables
        >(CREATE_ACCESS_TOKEN, {
          input: {
            type: "SERVICE_ACCOUNT",
            actorUrn: urn,
            duration: lifetime,
            name: options.name,
            description: options.description,
            scopes: options.scope,
          },
        });
        printCreatedToken(created, globalsOf(command).json);
      },
    );

  accounts
    .command("delete")
    .description("delete a service account: its tokens are revoked at once and the work it owns is suspended")
    .argument("<urn>", "the service account's urn")
    .option("-y, --yes", YES_HELP)
    .addHelpText("after", NEEDS)
    .action(async (urn: string, options: { yes?: boolean }, command: Command) => {
      const client = apiClient();
      await confirmDestructive(`delete service account ${urn} (its tokens revoked, its work suspended)`, options);
      await client.graphql<DeleteServiceAccountMutation, DeleteServiceAccountMutationVariables>(
        DELETE_SERVICE_ACCOUNT,
        { urn },
      );
      if (globalsOf(command).json) printJson({ urn, deleted: true });
      else printLine(`deleted ${urn}: its tokens are revoked, its work suspended`);
    });
}
