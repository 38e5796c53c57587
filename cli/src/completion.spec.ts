/**
 * `mdp completion <shell>`: the scripts are made from the program's command tree, and bash's is loaded in a real bash
 * and asked for completions as bash's own completion would ask (COMP_WORDS, COMP_CWORD, the registered function).
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { completionScript } from "./completion";
import { buildProgram } from "./main";

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), "mdp-completion-"));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const available = (shell: string) => spawnSync(shell, ["-c", "exit 0"]).status === 0;

/** What bash offers for `line` (the word at the cursor last, "" for a new word), with the script loaded. */
function bashCompletes(script: string, ...line: string[]): { registered: string; offered: string[] } {
  const file = path.join(dir, "mdp.bash");
  writeFileSync(file, script);
  const words = line.map((w) => `'${w}'`).join(" ");
  const run = spawnSync(
    "bash",
    [
      "--norc",
      "-c",
      `source '${file}' && complete -p mdp && COMP_WORDS=(mdp ${words}) && COMP_CWORD=${line.length} && ` +
        `$(complete -p mdp | sed -E 's/.* -F ([^ ]+) .*/\\1/') && printf '%s\\n' "\${COMPREPLY[@]}"`,
    ],
    { encoding: "utf8" },
  );
  if (run.status !== 0) throw new Error(`bash exited ${run.status}: ${run.stderr}`);
  const [registered, ...offered] = run.stdout.split("\n").filter(Boolean);
  return { registered: registered!, offered };
}

describe("mdp completion <shell>, as run", () => {
  const mdp = (...args: string[]) =>
    spawnSync(process.execPath, [path.resolve(__dirname, "../bin/mdp.cjs"), ...args], {
      encoding: "utf8",
      env: { ...process.env, MDP_URL: "", MDP_TOKEN: "" },
    });

  it("prints the script on stdout, needing no login, and refuses a shell it does not know (exit 1)", () => {
    const printed = mdp("completion", "bash");
    expect(printed.status).toBe(0);
    expect(printed.stdout).toBe(completionScript(buildProgram(), "bash"));
    const unknown = mdp("completion", "tcsh");
    expect(unknown.status).toBe(1);
    expect(unknown.stderr).toMatch(
      /value 'tcsh' is invalid for argument 'shell'\. Allowed choices are bash, zsh, fish/,
    );
  });
});

describe("mdp completion bash", () => {
  const script = completionScript(buildProgram(), "bash");

  it("registers a completion function for mdp that bash loads", () => {
    expect(bashCompletes(script, "").registered).toMatch(/^complete -o default -F _mdp mdp$/);
  });

  it("offers every command of the program, so a new one is completed without touching the script", () => {
    const program = buildProgram();
    expect(bashCompletes(script, "").offered.sort()).toEqual(program.commands.map((c) => c.name()).sort());
    const policies = program.commands.find((c) => c.name() === "policies")!;
    expect(bashCompletes(script, "policies", "").offered).toEqual(
      policies.commands.flatMap((c) => [c.name(), ...c.aliases()]),
    );
  });

  it("completes a prefix, a command's options with the global ones, and the choices of an option or argument", () => {
    expect(bashCompletes(script, "tok").offered).toEqual(["tokens"]);
    expect(bashCompletes(script, "tests", "up").offered).toEqual(["update"]);
    const options = bashCompletes(script, "tokens", "revoke", "--").offered;
    expect(options).toEqual(expect.arrayContaining(["--yes", "--json", "--wide", "--help"]));
    expect(bashCompletes(script, "tokens", "create", "--duration", "ONE_").offered).toEqual([
      "ONE_HOUR",
      "ONE_DAY",
      "ONE_WEEK",
      "ONE_MONTH",
      "ONE_YEAR",
    ]);
    expect(bashCompletes(script, "completion", "").offered).toEqual(["bash", "zsh", "fish"]);
  });

  it("skips global options and an option's value on the way to the command", () => {
    // `create` here is the value of --name, not the tokens command
    expect(bashCompletes(script, "--json", "tokens", "list", "--name", "create", "--").offered).toContain(
      "--unused-days",
    );
    expect(bashCompletes(script, "policies", "grant", "--").offered).toContain("--privilege");
  });

  it("leaves an option's free value and an argument to bash's default completion (files)", () => {
    expect(bashCompletes(script, "tests", "create", "").offered).toEqual([]);
    expect(bashCompletes(script, "tokens", "create", "--name", "").offered).toEqual([]);
  });
});

/**
 * What zsh offers for `line`: the completion function called as zsh's completion system calls it (words, CURRENT,
 * PREFIX), with compadd and _files recording what they were given.
 */
function zshCompletes(script: string, ...line: string[]): string[] {
  const file = path.join(dir, "mdp.zsh");
  writeFileSync(file, script);
  const words = line.map((w) => `'${w}'`).join(" ");
  const run = spawnSync(
    "zsh",
    [
      "-f",
      "-c",
      `compdef() {}; compadd() { while [[ $1 != -- ]]; do shift; done; shift; print -l -- "$@" }; ` +
        `_files() { print '(files)' }; source '${file}' && words=(mdp ${words}) && CURRENT=${line.length + 1} && ` +
        `PREFIX='${line.at(-1)}' && _mdp`,
    ],
    { encoding: "utf8" },
  );
  if (run.status !== 0) throw new Error(`zsh exited ${run.status}: ${run.stderr}`);
  return run.stdout.split("\n").filter(Boolean);
}

/** What fish offers for `line` (its own `complete -C`), without the descriptions. */
function fishCompletes(script: string, line: string): string[] {
  const file = path.join(dir, "mdp.fish");
  writeFileSync(file, script);
  const run = spawnSync("fish", ["--no-config", "-c", `source '${file}'; complete -C '${line}'`], { encoding: "utf8" });
  if (run.status !== 0) throw new Error(`fish exited ${run.status}: ${run.stderr}`);
  return run.stdout
    .split("\n")
    .filter(Boolean)
    .map((l) => l.split("\t")[0]!);
}

describe("mdp completion zsh and fish", () => {
  it.each(["zsh", "fish"] as const)("%s: a script the shell parses, naming every command", (shell) => {
    const script = completionScript(buildProgram(), shell);
    for (const name of ["tokens", "policies", "completion", "update"]) expect(script).toContain(name);
    if (!available(shell)) return; // the shell is not installed here: its parser cannot be asked
    const file = path.join(dir, `mdp.${shell}`);
    writeFileSync(file, script);
    const run = spawnSync(shell, ["-n", file], { encoding: "utf8" });
    expect(run.stderr).toBe("");
    expect(run.status).toBe(0);
  });

  it("zsh completes commands, options and choices as bash does", () => {
    if (!available("zsh")) return;
    const script = completionScript(buildProgram(), "zsh");
    const program = buildProgram();
    expect(zshCompletes(script, "").sort()).toEqual(program.commands.map((c) => c.name()).sort());
    expect(zshCompletes(script, "policies", "")).toEqual(["list", "create", "grant", "delete"]);
    expect(zshCompletes(script, "tokens", "revoke", "--")).toEqual(expect.arrayContaining(["--yes", "--json"]));
    expect(zshCompletes(script, "tokens", "create", "--duration", "")).toContain("ONE_WEEK");
    expect(zshCompletes(script, "tests", "create", "")).toEqual(["(files)"]);
  });

  it("fish completes commands, options and choices as bash does", () => {
    if (!available("fish")) return;
    const script = completionScript(buildProgram(), "fish");
    expect(fishCompletes(script, "mdp po")).toEqual(["policies"]);
    expect(fishCompletes(script, "mdp policies ").sort()).toEqual(["create", "delete", "grant", "list"]);
    expect(fishCompletes(script, "mdp tokens revoke --")).toEqual(expect.arrayContaining(["--yes", "--json"]));
    expect(fishCompletes(script, "mdp tokens create --duration ")).toContain("ONE_WEEK");
    expect(fishCompletes(script, "mdp completion ").sort()).toEqual(["bash", "fish", "zsh"]);
  });
});
