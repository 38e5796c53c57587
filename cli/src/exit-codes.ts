/**
 * The exit codes scripts can rely on (documented in cli/README.md and `mdp --help`). One table, so that a new error
 * path cannot invent its own number.
 */
export const EXIT = {
  /** the command did what was asked */
  OK: 0,
  /**
   * the request was refused as given: a usage error, a destructive command not confirmed (declined, or without a
   * terminal to ask and without --yes), or the server's 400/409/413/415
   */
  USAGE: 1,
  /** not logged in, or the server refused the credentials or the privilege (401, 403) */
  AUTH: 2,
  /** what was named does not exist (404) */
  NOT_FOUND: 3,
  /** the server or the network failed: 5xx, 429, unreachable, timed out, or an answer that is not the API's */
  SERVER: 4,
  /** the task watched ended failed or cancelled */
  TASK_FAILED: 5,
  /** `tests evaluate --exit-code`: at least one test failed */
  TEST_FAILED: 6,
  /** interrupted (Ctrl-C) while watching a task (the task goes on), or at a confirmation (nothing was done) */
  INTERRUPTED: 130,
} as const;

export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

/** The exit codes as `mdp --help` prints them. */
export const EXIT_CODES_HELP = `Exit codes:
  0    ok
  1    usage error, a destructive command not confirmed (declined, or no terminal and no --yes),
       or the server refused the request as given (400, 409, 413, 415)
  2    not logged in, or the server refused the credentials or the privilege (401, 403)
  3    not found (404)
  4    server or network error (5xx, 429, unreachable, timeout)
  5    the task watched ended failed or cancelled
  6    tests evaluate --exit-code: at least one test failed
  130  interrupted while watching a task (the task goes on), or at a confirmation (nothing done)`;

/** An error the CLI reports as one line (never a stack trace) and exits with `exitCode`. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode: ExitCode,
    /** the server's error code (BAD_USER_INPUT, FORBIDDEN, ...) and HTTP status, when the server answered */
    readonly server?: { status?: number; code?: string },
  ) {
    super(message);
  }
}

export const usageError = (message: string) => new CliError(message, EXIT.USAGE);

/** The exit code of an HTTP status the server answered with. */
export function exitCodeOfStatus(status: number): ExitCode {
  if (status === 401 || status === 403) return EXIT.AUTH;
  if (status === 404) return EXIT.NOT_FOUND;
  if (status === 429 || status >= 500) return EXIT.SERVER;
  if (status >= 400) return EXIT.USAGE;
  return EXIT.SERVER; // a status the API does not answer errors with
}

const GRAPHQL_CODES: Record<string, ExitCode> = {
  UNAUTHENTICATED: EXIT.AUTH,
  FORBIDDEN: EXIT.AUTH,
  NOT_FOUND: EXIT.NOT_FOUND,
  BAD_USER_INPUT: EXIT.USAGE,
  GRAPHQL_VALIDATION_FAILED: EXIT.USAGE,
  GRAPHQL_PARSE_FAILED: EXIT.USAGE,
  CONFLICT: EXIT.USAGE,
};

/** The exit code of a GraphQL error's extensions.code; anything else (INTERNAL_SERVER_ERROR, 503s, 429s) is 4. */
export function exitCodeOfGraphQLCode(code: string | undefined): ExitCode {
  return (code !== undefined && Object.hasOwn(GRAPHQL_CODES, code) ? GRAPHQL_CODES[code] : undefined) ?? EXIT.SERVER;
}
