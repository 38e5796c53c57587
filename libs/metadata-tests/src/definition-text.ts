import { parse as parseYaml } from "yaml";
import { DEFINITION_LIMITS, checkDefinitionBytes, flowNestingDepth } from "./definition-limits";
import { TestDefinitionError } from "./test-definition.error";

/**
 * Reads definition text written as JSON or YAML. JSON is tried first because it is what the UI sends and its error
 * messages are precise; YAML (1.2, so `on:` stays the key "on" rather than becoming `true` as in YAML 1.1) otherwise.
 * Text over the byte limit is refused unread; nesting is checked on the decoded value (see checkDefinitionShape),
 * except that YAML nested deeper than the limit is refused before the yaml library's recursion meets it.
 */
export function readDefinitionText(text: string): unknown {
  if (text.trim() === "") throw new TestDefinitionError([{ path: "", message: "the definition is empty" }]);
  checkDefinitionBytes(text);
  let jsonError: unknown;
  try {
    // JSON.parse does not recurse on the stack: any depth within the byte limit decodes.
    return JSON.parse(text);
  } catch (error) {
    jsonError = error;
  }
  if (flowNestingDepth(text, DEFINITION_LIMITS.depth) > DEFINITION_LIMITS.depth) throw tooDeep();
  try {
    // logLevel "error": throw on errors, and never print warnings from library code. Aliases are pointless in a
    // definition; the cap keeps an alias bomb from expanding.
    return parseYaml(text, { logLevel: "error", maxAliasCount: 100 });
  } catch (yamlError) {
    // Block nesting the bracket scan does not see: the library's stack gave out, which says the text is too deep.
    if (/call stack/i.test(firstLine(yamlError))) throw tooDeep();
    const yamlReason = firstLine(yamlError);
    // Text starting with { or [ was probably meant as JSON, so its JSON error is the useful one.
    const message = /^\s*[[{]/.test(text)
      ? `neither valid JSON (${firstLine(jsonError)}) nor valid YAML (${yamlReason})`
      : `not valid YAML: ${yamlReason}`;
    throw new TestDefinitionError([{ path: "", message }]);
  }
}

function tooDeep(): TestDefinitionError {
  return new TestDefinitionError([
    { path: "", message: `nested more than ${DEFINITION_LIMITS.depth} levels deep (the limit)` },
  ]);
}

// The yaml library appends a source excerpt after the first line; the position in the first line is enough.
function firstLine(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return (message.split("\n")[0] ?? message).replace(/:$/, "");
}
