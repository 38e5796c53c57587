/**
 * `mdp`: the admin command line of the metadata platform administration service. It talks to a gateway over HTTP
 * only (the actions under /gms and GraphQL), never to PostgreSQL or Redis, and imports no workspace package, so it
 * installs on its own.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { Command, CommanderError } from "commander";
import { registerCompletion } from "./commands/completion";
import { registerEvents } from "./commands/events";
import { registerLogin } from "./commands/login";
import { registerOperations } from "./commands/operations";
import { registerPolicies } from "./commands/policies";
import { registerRetention } from "./commands/retention";
import { registerServiceAccounts } from "./commands/service-accounts";
import { registerTests } from "./commands/tests";
import { registerTokens } from "./commands/tokens";
import { registerWebhooks } from "./commands/webhooks";
import { CliError, EXIT, EXIT_CODES_HELP } from "./exit-codes";
import { configureOutput, type GlobalOptions } from "./output";
import { unknownCommand } from "./unknown-command";

function version(): string {
  // src/ in development, dist/ once built: package.json is beside either
  const pkg = JSON.parse(readFileSync(path.join(__dirname, "..", "package.json"), "utf8")) as { version: string };
  return pkg.version;
}

export function buildProgram(): Command {
  const program = new Command("mdp")
    .description(
      "Administer a metadata platform service: access tokens, time-series truncation and retention, metadata tests.",
    )
    .version(version(), "-V, --version")
    .option("--json", "print the answer as JSON on stdout, for scripts (errors: one JSON line on stderr)")
    .option("--wide", "on a terminal, show every column of a table and every value whole, however wide")
    .configureHelp({ showGlobalOptions: true, sortSubcommands: false })
    .showHelpAfterError("(add --help for usage)")
    .addHelpText(
      "after",
      `
Credentials: mdp login stores a URL and an access token in $XDG_CONFIG_HOME/mdp/config.json
(~/.config/mdp/config.json), mode 0600; MDP_URL and MDP_TOKEN override it, for scripts.

${EXIT_CODES_HELP}`,
    );
  registerLogin(program);
  registerTokens(program);
  registerServiceAccounts(program);
  registerPolicies(program);
  registerOperations(program);
  registerTests(program);
  registerRetention(program);
  registerWebhooks(program);
  registerEvents(program);
  registerCompletion(program);
  program.hook("preAction", (_program, action) => configureOutput(action.optsWithGlobals<GlobalOptions>()));
  // every command, however deep, says what it does on --help and shows the global options
  const configure = (command: Command) => {
    command.configureHelp({ showGlobalOptions: true });
    command.showHelpAfterError("(add --help for usage)");
    command.commands.forEach(configure);
  };
  program.commands.forEach(configure);
  return program;
}

export async function main(argv: string[] = process.argv): Promise<void> {
  const program = buildProgram();
  const unknown = unknownCommand(program, argv.slice(2));
  if (unknown) {
    process.exitCode = report(unknown, argv.includes("--json"));
    return;
  }
  try {
    await program.parseAsync(argv);
  } catch (error) {
    process.exitCode = report(error, argv.includes("--json"));
  }
}

/** One line on stderr (JSON with --json), never a stack trace; returns the exit code. */
function report(error: unknown, json: boolean): number {
  if (error instanceof CommanderError) return error.exitCode; // commander has printed it already
  const known = error instanceof CliError ? error : undefined;
  const message = known ? known.message : `unexpected error: ${(error as Error)?.message ?? String(error)}`;
  const exitCode = known ? known.exitCode : EXIT.SERVER;
  if (json) {
    process.stderr.write(`${JSON.stringify({ error: { message, exitCode, ...known?.server } })}\n`);
  } else {
    process.stderr.write(`mdp: ${message}\n`);
  }
  return exitCode;
}

if (require.main === module) void main();
