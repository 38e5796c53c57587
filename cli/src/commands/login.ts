import type { Command } from "commander";
import { ApiClient } from "../client";
import { configFile, normalizeUrl, removeLogin, writeLogin } from "../config";
import { CliError, EXIT, usageError } from "../exit-codes";
import type { MeQuery } from "../generated/graphql";
import { ME } from "../graphql-operations/me";
import { apiClient, globalsOf } from "../options";
import { counted, printJson, printLine } from "../output";

const DEFAULT_URL = "http://127.0.0.1:8080";

export function registerLogin(program: Command): void {
  program
    .command("login")
    .description(
      "verify an access token against the server and store it (with the URL) in your config dir, readable by you only",
    )
    .argument("[url]", `the gateway's URL (default: MDP_URL, else ${DEFAULT_URL})`)
    .option("--token <token>", "the access token (default: MDP_TOKEN, else read from stdin, else asked for)")
    .addHelpText(
      "after",
      `
The token is checked with the server (GraphQL { me }) before anything is stored. It is written to
$XDG_CONFIG_HOME/mdp/config.json (or ~/.config/mdp/config.json), mode 0600 in a 0700 directory.
Prefer stdin or the prompt to --token: a command line is visible to other users of the machine.

Examples:
  mdp login http://127.0.0.1:8080                   # asks for the token
  echo "$TOKEN" | mdp login https://mdp.example.com`,
    )
    .action(async (urlArg: string | undefined, options: { token?: string }, command: Command) => {
      const url = normalizeUrl(urlArg ?? process.env.MDP_URL ?? DEFAULT_URL);
      const token = (options.token ?? process.env.MDP_TOKEN ?? (await readToken())).trim();
      if (!token) throw usageError("no access token given (--token, MDP_TOKEN, stdin or the prompt)");
      const { me } = await new ApiClient(url, token).graphql<MeQuery>(ME);
      const file = writeLogin({ url, token, urn: me.urn });
      if (globalsOf(command).json) {
        printJson({ url, urn: me.urn, privileges: me.privileges, configFile: file });
        return;
      }
      const host = new URL(url).hostname;
      if (url.startsWith("http:") && !["127.0.0.1", "localhost", "::1", "[::1]"].includes(host)) {
        process.stderr.write(`warning: ${url} is plain http: the token travels unencrypted\n`);
      }
      printLine(
        `logged in to ${url} as ${me.urn} (${counted(me.privileges.length, "privilege")}); token stored in ${file}`,
      );
    });

  program
    .command("logout")
    .description("forget the stored URL and token (the token itself stays valid: revoke it with mdp tokens revoke)")
    .action((_options: unknown, command: Command) => {
      const removed = removeLogin();
      if (globalsOf(command).json) printJson({ removed, configFile: configFile() });
      else printLine(removed ? `logged out: removed ${configFile()}` : "not logged in: nothing to remove");
    });

  program
    .command("whoami")
    .description("the user the token acts for, and the privileges it holds")
    .action(async (_options: unknown, command: Command) => {
      const client = apiClient();
      const { me } = await client.graphql<MeQuery>(ME);
      if (globalsOf(command).json) printJson({ url: client.url, ...me });
      else {
        printLine(`${me.urn} at ${client.url}`);
        printLine(`privileges: ${me.privileges.length ? me.privileges.join(", ") : "none"}`);
      }
    });
}

/** The token from stdin when it is piped, else asked for on the terminal without echoing it. */
async function readToken(): Promise<string> {
  if (!process.stdin.isTTY) {
    let text = "";
    for await (const chunk of process.stdin) text += String(chunk);
    return text;
  }
  // The terminal in raw mode, read by hand: nothing typed is echoed (not even the cursor moves), and the prompt stays.
  // Raw before the prompt: keys typed the moment it shows must not meet the terminal's own echo.
  const stdin = process.stdin;
  stdin.setRawMode(true);
  process.stderr.write("access token: ");
  stdin.setEncoding("utf8");
  stdin.resume();
  return new Promise((resolve, reject) => {
    let token = "";
    const done = (end: () => void) => {
      stdin.off("data", onData);
      stdin.setRawMode(false);
      stdin.pause();
      process.stderr.write("\n");
      end();
    };
    const onData = (chunk: string) => {
      for (const ch of chunk) {
        if (ch === "\r" || ch === "\n") return done(() => resolve(token));
        if (ch === "\u0003" || ch === "\u0004") {
          return done(() => reject(new CliError("login abandoned", EXIT.USAGE))); // Ctrl-C, Ctrl-D
        }
        if (ch === "\u007f" || ch === "\b") token = token.slice(0, -1);
        else if (ch >= " ") token += ch;
      }
    };
    stdin.on("data", onData);
  });
}
