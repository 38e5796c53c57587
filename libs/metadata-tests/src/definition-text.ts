import { parse as parseYaml } from "yaml";
import { TestDefinitionError } from "./test-definition.error";

/**
 * Reads definition text written as JSON or YAML. JSON is tried first because it is what the UI sends and its error
 * messages are precise; YAML (1.2, so `on:` stays the key "on" rather than becoming `true` as in YAML 1.1) otherwise.
 */
export function readDefinitionText(text: string): unknown {
  if (text.trim() === "") throw new TestDefinitionError([{ path: "", message: "the definition is empty" }]);
  let jsonError: unknown;
  try {
    return JSON.parse(text);
  } catch (error) {
    jsonError = error;
  }
  try {
    // logLevel "error": throw on errors, and never print warnings from library code.
    return parseYaml(text, { logLevel: "error" });
  } catch (yamlError) {
    const yamlReason = firstLine(yamlError);
    // Text starting with { or [ was probably meant as JSON, so its JSON error is the useful one.
    const message = /^\s*[[{]/.test(text)
      ? `neither valid JSON (${firstLine(jsonError)}) nor valid YAML (${yamlReason})`
      : `not valid YAML: ${yamlReason}`;
    throw new TestDefinitionError([{ path: "", message }]);
  }
}

// The yaml library appends a source excerpt after the first line; the position in the first line is enough.
function firstLine(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return (message.split("\n")[0] ?? message).replace(/:$/, "");
}
