import { chmodSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { CliError, EXIT } from "./exit-codes";

/** What `mdp login` stores: the server and a token verified against it. */
export interface StoredLogin {
  url: string;
  token: string;
  /** who the token acts for, as the server said at login */
  urn: string;
}

/** The server and token a command uses, and where they came from (for messages). */
export interface Credentials {
  url: string;
  token: string;
  source: "environment" | "config";
}

/** `$XDG_CONFIG_HOME/mdp`, or `~/.config/mdp` (the XDG base directory default). */
export function configDir(env: NodeJS.ProcessEnv = process.env): string {
  const base = env.XDG_CONFIG_HOME && path.isAbsolute(env.XDG_CONFIG_HOME) ? env.XDG_CONFIG_HOME : undefined;
  return path.join(base ?? path.join(os.homedir(), ".config"), "mdp");
}

export const configFile = (env: NodeJS.ProcessEnv = process.env) => path.join(configDir(env), "config.json");

/** A URL as stored and compared: no trailing slash. */
export function normalizeUrl(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new CliError(`'${url}' is not a URL (e.g. http://127.0.0.1:8080)`, EXIT.USAGE);
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") {
    throw new CliError(`'${url}' is not an http:// or https:// URL`, EXIT.USAGE);
  }
  return parsed.toString().replace(/\/+$/, "");
}

export function readLogin(env: NodeJS.ProcessEnv = process.env): StoredLogin | undefined {
  let text: string;
  try {
    text = readFileSync(configFile(env), "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw new CliError(`cannot read ${configFile(env)}: ${(error as Error).message}`, EXIT.USAGE);
  }
  try {
    const stored = JSON.parse(text) as Partial<StoredLogin>;
    if (typeof stored.url === "string" && typeof stored.token === "string") {
      return { url: stored.url, token: stored.token, urn: stored.urn ?? "" };
    }
  } catch {
    // reported below
  }
  throw new CliError(`${configFile(env)} is not what mdp login writes; run mdp login again`, EXIT.USAGE);
}

/**
 * Writes the login readable by its owner only: the directory 0700, the file 0600 from the moment it exists (written
 * to a temporary file of that mode, then renamed over the old one), whatever the umask.
 */
export function writeLogin(login: StoredLogin, env: NodeJS.ProcessEnv = process.env): string {
  const dir = configDir(env);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  chmodSync(dir, 0o700);
  const file = configFile(env);
  const temporary = `${file}.${process.pid}.tmp`;
  writeFileSync(temporary, `${JSON.stringify(login, null, 2)}\n`, { mode: 0o600 });
  chmodSync(temporary, 0o600);
  renameSync(temporary, file);
  return file;
}

/** Forgets the stored login; true when there was one. */
export function removeLogin(env: NodeJS.ProcessEnv = process.env): boolean {
  const file = configFile(env);
  try {
    rmSync(file);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return false;
    throw error;
  }
}

/**
 * MDP_URL and MDP_TOKEN (for scripts) override the stored login. A stored token is only ever sent to the server it was
 * verified against: with MDP_URL naming another server and no MDP_TOKEN, there are no credentials.
 */
export function credentials(env: NodeJS.ProcessEnv = process.env): Credentials {
  const stored = readLogin(env);
  const url = env.MDP_URL ? normalizeUrl(env.MDP_URL) : stored?.url;
  if (env.MDP_TOKEN) {
    if (!url) throw new CliError("MDP_TOKEN is set but not MDP_URL: set MDP_URL too, or run mdp login", EXIT.AUTH);
    return { url, token: env.MDP_TOKEN, source: "environment" };
  }
  if (!stored) throw new CliError("not logged in: run mdp login <url> (or set MDP_URL and MDP_TOKEN)", EXIT.AUTH);
  if (url !== stored.url) {
    throw new CliError(
      `logged in to ${stored.url}, not to MDP_URL=${url}: run mdp login ${url}, or set MDP_TOKEN`,
      EXIT.AUTH,
    );
  }
  return { url: stored.url, token: stored.token, source: "config" };
}
