/** What the definition parser's specs share (definition.parser*.spec.ts): the refusal a definition gets; small definitions. */
import { parseTestDefinition } from "./definition.parser";
import { TestDefinitionError } from "./test-definition.error";

export const PREFIX = "Failed to validate test definition: ";

/** The error a definition is refused with (the test fails if it is accepted). */
export function refusal(text: string): TestDefinitionError {
  try {
    parseTestDefinition(text);
  } catch (error) {
    if (error instanceof TestDefinitionError) return error;
    throw error;
  }
  throw new Error(`accepted: ${text}`);
}

/** Same, for a definition given as an object (written as JSON text, as a client would send it). */
export const refusalOf = (definition: unknown) => refusal(JSON.stringify(definition));

export const onDatasets = { types: ["dataset"] };
export const rulesWith = (leaf: object) => ({ on: onDatasets, rules: [leaf] });
