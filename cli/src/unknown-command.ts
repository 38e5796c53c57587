import type { Command } from "commander";
import { usageError, type CliError } from "./exit-codes";

/**
 * The first word of the command line that names no command where one is expected, as an error with a suggestion; or
 * undefined. commander reports `mdp tokens foo` itself, but printed the group's help and exited 0 for
 * `mdp tokens foo --help` and `mdp help tokens foo`, as though `foo` were fine: checked here, before it parses.
 * Options are skipped: a command with subcommands takes none with a value (--json, --wide, --help), and a command
 * without subcommands ends the walk, the rest being its own arguments and options.
 */
export function unknownCommand(program: Command, args: string[]): CliError | undefined {
  let command = program;
  let path = program.name();
  for (const arg of args) {
    if (command.commands.length === 0) return undefined;
    if (arg.startsWith("-")) continue;
    // `mdp help tokens revoke` and `mdp tokens help revoke` name the command after `help`
    if (arg === "help") continue;
    const sub = command.commands.find((c) => c.name() === arg || c.aliases().includes(arg));
    if (!sub) {
      const names = command.commands.map((c) => c.name());
      const near = suggestions(arg, names).map((name) => `${path} ${name}`);
      const hint = near.length > 0 ? `did you mean ${near.join(" or ")}?` : `${path} --help lists them`;
      return usageError(`unknown command '${arg}' for ${path}: ${hint}`);
    }
    command = sub;
    path = `${path} ${sub.name()}`;
  }
  return undefined;
}

/** The names within a few edits of `typed`, nearest first; failing those, the names that start with it. */
export function suggestions(typed: string, names: string[]): string[] {
  const near = names
    .map((name) => ({ name, distance: editDistance(typed.toLowerCase(), name.toLowerCase()) }))
    .filter(({ name, distance }) => distance <= Math.max(1, Math.floor(name.length / 3)))
    .sort((a, b) => a.distance - b.distance)
    .map(({ name }) => name);
  if (near.length > 0) return near;
  return typed.length >= 2 ? names.filter((name) => name.startsWith(typed.toLowerCase())) : [];
}

/** Optimal string alignment distance: insertions, deletions, substitutions and swaps of neighbours each cost one. */
function editDistance(a: string, b: string): number {
  const d = Array.from({ length: a.length + 1 }, (_, i) =>
    Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)),
  );
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      d[i]![j] = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        d[i]![j] = Math.min(d[i]![j]!, d[i - 2]![j - 2]! + 1);
      }
    }
  }
  return d[a.length]![b.length]!;
}
