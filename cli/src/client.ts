import type { ActionAnswer, ActionEnvelope, ActionKey, ActionRequest } from "./api-types";
import { CliError, EXIT, exitCodeOfGraphQLCode, exitCodeOfStatus } from "./exit-codes";

/**
 * The gateway's HTTP API, as the CLI uses it: Rest.li-style actions (`POST <path>?action=<name>`, answered
 * `{"value": ...}`), GraphQL, and GETs. Every failure becomes a CliError carrying the server's own message and the exit
 * code of its status, so no command handles HTTP errors itself.
 */
export class ApiClient {
  constructor(
    readonly url: string,
    private readonly token: string,
    /** longer than the gateway's own evaluate wait (EVALUATE_TIMEOUT_MS, 30 s by default), which answers 504 */
    private readonly timeoutMs = 65_000,
  ) {}

  /** `POST {url}/gms{action}` (`action` as the OpenAPI document names it: `/operations?action=getTaskStatus`) → its `value`. */
  async action<K extends ActionKey>(action: K, body?: ActionRequest<K>): Promise<ActionAnswer<K>> {
    const answer = await this.send("POST", `/gms${action}`, body ?? {});
    return (answer as { value: ActionAnswer<K> }).value;
  }

  /** As `action`, answering the whole body: `value` and what an action answers beside it (a dry run's `plan`). */
  async actionEnvelope<K extends ActionKey>(action: K, body?: ActionRequest<K>): Promise<ActionEnvelope<K>> {
    return (await this.send("POST", `/gms${action}`, body ?? {})) as ActionEnvelope<K>;
  }

  async get<T>(path: string): Promise<T> {
    return ((await this.send("GET", path)) as { value: T }).value;
  }

  /**
   * A GraphQL operation of graphql-operations/ → its `data`, typed by generated/graphql.ts; the first error, as the
   * server phrased it, otherwise.
   */
  async graphql<T, V extends Record<string, unknown> = Record<string, never>>(
    query: string,
    variables?: V,
  ): Promise<T> {
    const answer = (await this.send("POST", "/api/graphql", { query, variables: variables ?? {} })) as {
      data?: T | null;
      errors?: Array<{ message?: string; extensions?: { code?: string } }>;
    };
    const error = answer.errors?.[0];
    if (error) {
      const code = error.extensions?.code;
      throw new CliError(error.message ?? "the server answered with an error", exitCodeOfGraphQLCode(code), { code });
    }
    if (answer.data === undefined || answer.data === null) throw unreadable(this.url, "no data");
    return answer.data;
  }

  private async send(method: "GET" | "POST", path: string, body?: unknown): Promise<unknown> {
    const target = `${this.url}${path}`;
    let response: Response;
    try {
      response = await fetch(target, {
        method,
        headers: {
          authorization: `Bearer ${this.token}`,
          accept: "application/json",
          ...(body === undefined ? {} : { "content-type": "application/json" }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(this.timeoutMs),
      });
    } catch (error) {
      throw new CliError(`cannot reach ${this.url}: ${networkReason(error)}`, EXIT.SERVER);
    }
    const text = await response.text().catch(() => "");
    let answer: unknown;
    try {
      answer = JSON.parse(text);
    } catch {
      const what = response.ok ? "an answer that is not JSON" : `HTTP ${response.status} ${response.statusText}`;
      throw new CliError(
        `${this.url} answered ${what}: is it the metadata service?`,
        exitCodeOfStatus(response.status),
      );
    }
    if (!response.ok) {
      const status = response.status;
      // HTTP errors: {status, code, message}; GraphQL ones (401, 413 on /api/graphql): {errors: [{message, extensions}]}
      const http = answer as { code?: string; message?: string };
      const graphql = (answer as { errors?: Array<{ message?: string; extensions?: { code?: string } }> }).errors?.[0];
      const message = http.message ?? graphql?.message ?? `HTTP ${status} ${response.statusText}`;
      const retryAfter = response.headers.get("retry-after");
      const code = http.code ?? graphql?.extensions?.code;
      throw new CliError(retryAfter ? `${message} (retry after ${retryAfter} s)` : message, exitCodeOfStatus(status), {
        status,
        code,
      });
    }
    return answer;
  }
}

function networkReason(error: unknown): string {
  const cause = (error as { cause?: { code?: string; message?: string } }).cause;
  if ((error as Error).name === "TimeoutError") return "no answer in time";
  if (cause?.code === "ECONNREFUSED") return "connection refused (is the gateway running?)";
  if (cause?.code === "ENOTFOUND") return "unknown host";
  return cause?.message ?? (error as Error).message;
}

function unreadable(url: string, what: string): CliError {
  return new CliError(`${url} answered ${what}: is it the metadata service?`, EXIT.SERVER);
}
