import readline from "node:readline";
import { CliError, EXIT, usageError } from "./exit-codes";

/** Whether a person can be asked: questions are read from stdin and written on stderr (stdout may be piped). */
export const onTerminal = (): boolean => Boolean(process.stdin.isTTY && process.stderr.isTTY);

/**
 * Asks one question on the terminal; resolves to the answer, or undefined when the user pressed Ctrl-C or Ctrl-D
 * instead of answering.
 */
export function ask(question: string): Promise<string | undefined> {
  const rl = readline.createInterface({ input: process.stdin, output: process.stderr });
  return new Promise((resolve) => {
    let answered = false;
    const done = (answer: string | undefined) => {
      if (answered) return;
      answered = true;
      rl.close();
      resolve(answer);
    };
    rl.on("SIGINT", () => {
      process.stderr.write("\n");
      done(undefined);
    });
    rl.on("close", () => done(undefined));
    rl.question(question, (answer) => done(answer));
  });
}

export const isYes = (answer: string | undefined): boolean => /^y(es)?$/i.test(answer?.trim() ?? "");

/** What a destructive command does before its request: go ahead, ask the person at the terminal, or refuse. */
export function confirmationStep(options: { yes?: boolean; terminal: boolean }): "proceed" | "ask" | "refuse" {
  if (options.yes) return "proceed";
  return options.terminal ? "ask" : "refuse";
}

/**
 * The confirmation of a command that cannot be undone, as gh asks it: `--yes` goes ahead; on a terminal the user is
 * asked `<action>? [y/N]` (no by default); otherwise the command is refused before any request, since a script that
 * left out `--yes` cannot be asked. Throws, having changed nothing, unless the command is to go on.
 */
export async function confirmDestructive(action: string, options: { yes?: boolean }): Promise<void> {
  const step = confirmationStep({ yes: options.yes, terminal: onTerminal() });
  if (step === "proceed") return;
  if (step === "refuse") throw usageError(`${action}: needs --yes when not on a terminal (nothing was done)`);
  const answer = await ask(`${action}? [y/N] `);
  if (answer === undefined) throw new CliError("interrupted: nothing was done", EXIT.INTERRUPTED);
  if (!isYes(answer)) throw usageError("not confirmed: nothing was done");
}

/** The help line of every destructive command's `--yes`. */
export const YES_HELP = "do it without asking (needed when not on a terminal: scripts, CI)";

/**
 * Ctrl-C read as a key while a long command runs on a terminal: the terminal is put in raw mode, so the key reaches
 * this process as a byte and the terminal sends no SIGINT to its foreground process group. A package manager running
 * mdp as a script (`pnpm mdp`) is in that group, and pnpm ends its script on a second SIGINT: it must never get one.
 * `resume()` takes the terminal, `pause()` hands it back (for a question, and at the end).
 */
export class InterruptKey {
  private active = false;
  private readonly onData = (chunk: Buffer | string) => {
    if (typeof chunk === "string" ? chunk.includes("\u0003") : chunk.includes(3)) this.onInterrupt();
  };

  constructor(private readonly onInterrupt: () => void) {}

  resume(): void {
    if (this.active || !process.stdin.isTTY) return;
    this.active = true;
    process.stdin.setRawMode(true);
    process.stdin.on("data", this.onData);
    process.stdin.resume();
  }

  pause(): void {
    if (!this.active) return;
    this.active = false;
    process.stdin.off("data", this.onData);
    process.stdin.setRawMode(false);
    process.stdin.pause();
  }
}
