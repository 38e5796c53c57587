import { AppError } from "@mdp/core";

/** One thing wrong with a definition, and where: a path inside the definition as the user wrote it. */
export interface DefinitionProblem {
  /** e.g. `rules.and[1].operator`; empty for the definition as a whole */
  path: string;
  message: string;
}

/**
 * An invalid definition. Every problem found is reported at once, so a user fixes them in one round trip.
 * It is a BAD_USER_INPUT AppError, so the gateway's one error mapper turns it into a 400 / GraphQL error unchanged.
 */
export class TestDefinitionError extends AppError {
  readonly problems: DefinitionProblem[];

  constructor(problems: DefinitionProblem[]) {
    super("BAD_USER_INPUT", `Failed to validate test definition: ${problems.map(formatProblem).join("; ")}`, {
      problems,
    });
    this.name = "TestDefinitionError";
    this.problems = problems;
  }
}

function formatProblem(problem: DefinitionProblem): string {
  return problem.path ? `${problem.path}: ${problem.message}` : problem.message;
}
