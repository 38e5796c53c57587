import { Argument, type Command } from "commander";
import { completionScript, SHELLS, type Shell } from "../completion";

export function registerCompletion(program: Command): void {
  program
    .command("completion")
    .description("print a completion script for your shell (bash, zsh or fish), made from mdp's own commands")
    .addArgument(new Argument("<shell>", "the shell to complete in").choices(SHELLS))
    .addHelpText(
      "after",
      `
Load it from your shell's startup file:
  bash (~/.bashrc):          source <(mdp completion bash)
  zsh (~/.zshrc, after compinit): source <(mdp completion zsh)
  fish:                      mdp completion fish > ~/.config/fish/completions/mdp.fish`,
    )
    .action((shell: Shell) => {
      process.stdout.write(completionScript(program, shell));
    });
}
