import type { Command } from "commander";
import { usageError } from "../exit-codes";
import type {
  CreatePolicyMutation,
  CreatePolicyMutationVariables,
  DeletePolicyMutation,
  DeletePolicyMutationVariables,
  ListPoliciesQuery,
  ListPoliciesQueryVariables,
  PolicyFieldsFragment,
} from "../generated/graphql";
import { CREATE_POLICY, DELETE_POLICY, LIST_POLICIES } from "../graphql-operations/policies";
import { apiClient, globalsOf, wholeNumber } from "../options";
import { printJson, printLine, printRecord, printTable } from "../output";
import { confirmDestructive, YES_HELP } from "../terminal";
import { pageLine } from "./tokens";

const NEEDS =
  "\nEvery policy command needs MANAGE_POLICIES. A change takes effect on every gateway replica within a second.";

/** Whom a policy grants to: `all users`, or its users and groups. */
export function actorsText(actors: PolicyFieldsFragment["actors"]): string {
  if (actors.allUsers) return "all users";
  const named = [...actors.users, ...actors.groups];
  return named.length > 0 ? named.join(", ") : "nobody";
}

/** `mdp policies`: the platform policies that grant users, groups and service accounts their privileges. */
export function registerPolicies(program: Command): void {
  const policies = program
    .command("policies")
    .description(
      "platform policies, which grant privileges to users, groups and service accounts: list, create, delete",
    );

  policies
    .command("list")
    .description("list policies: the built-in root policy first, then oldest first")
    .option("--query <text>", "only policies whose name or description contains it")
    .option("--start <n>", "skip this many", wholeNumber(0, 1_000_000_000), 0)
    .option("--count <n>", "list at most this many (1-1000)", wholeNumber(1, 1000), 20)
    .addHelpText("after", NEEDS)
    .action(async (options: { query?: string; start: number; count: number }, command: Command) => {
      const { listPolicies: page } = await apiClient().graphql<ListPoliciesQuery, ListPoliciesQueryVariables>(
        LIST_POLICIES,
        { input: { start: options.start, count: options.count, query: options.query } },
      );
      if (globalsOf(command).json) return printJson(page);
      printTable(
        ["policy", "name", "state", "privileges", "granted to"],
        page.policies.map((p) => [p.urn, p.name, p.state, p.privileges.join(", "), actorsText(p.actors)]),
        { shorten: ["name", "privileges", "granted to"] },
      );
      printLine(pageLine(page.start, page.policies.length, page.total, "policies", "policy"));
    });

  policies
    .command("create")
    .alias("grant")
    .description("create a policy granting privileges to users, groups or everyone (alias: grant)")
    .requiredOption("--name <name>", "what the policy is for (1-256 characters)")
    .requiredOption("--privilege <privilege...>", "the privileges it grants, e.g. GET_ENTITY MANAGE_TESTS")
    .option("--user <urn...>", "users (and service accounts) it grants them to")
    .option("--group <urn...>", "groups it grants them to (their members)")
    .option("--all-users", "grant them to every user")
    .option("--description <text>", "a longer description")
    .option("--inactive", "create it INACTIVE: it grants nothing until set ACTIVE")
    .addHelpText(
      "after",
      `${NEEDS}\nExample (a service account that may read entities and run tests):\n` +
        "  mdp policies create --name nightly --privilege GET_ENTITY MANAGE_TESTS --user urn:li:corpuser:service_...",
    )
    .action(
      async (
        options: {
          name: string;
          privilege: string[];
          user?: string[];
          group?: string[];
          allUsers?: boolean;
          description?: string;
          inactive?: boolean;
        },
        command: Command,
      ) => {
        if (!options.user && !options.group && !options.allUsers) {
          throw usageError("say whom the policy grants to: --user <urn…>, --group <urn…> or --all-users");
        }
        const input = {
          name: options.name,
          description: options.description,
          state: options.inactive ? ("INACTIVE" as const) : ("ACTIVE" as const),
          privileges: options.privilege,
          actors: { users: options.user ?? [], groups: options.group ?? [], allUsers: Boolean(options.allUsers) },
        };
        const { createPolicy: urn } = await apiClient().graphql<CreatePolicyMutation, CreatePolicyMutationVariables>(
          CREATE_POLICY,
          { input },
        );
        if (globalsOf(command).json) return printJson({ urn, ...input });
        printRecord([
          ["policy", urn],
          ["name", input.name],
          ["state", input.state],
          ["privileges", input.privileges.join(", ")],
          ["granted to", actorsText(input.actors)],
        ]);
      },
    );

  policies
    .command("delete")
    .description("delete a policy: what it granted is withdrawn on every gateway replica within a second")
    .argument("<urn>", "the policy's urn (mdp policies list); the built-in root policy cannot be deleted")
    .option("-y, --yes", YES_HELP)
    .addHelpText("after", NEEDS)
    .action(async (urn: string, options: { yes?: boolean }, command: Command) => {
      const client = apiClient();
      await confirmDestructive(`delete policy ${urn} (what it grants is withdrawn)`, options);
      await client.graphql<DeletePolicyMutation, DeletePolicyMutationVariables>(DELETE_POLICY, { urn });
      if (globalsOf(command).json) printJson({ urn, deleted: true });
      else printLine(`deleted policy ${urn}`);
    });
}
