import { readFileSync, statSync } from "node:fs";
import { parse as parseYaml } from "yaml";
import { usageError } from "../exit-codes";
import type { CreateTestInput, TestState } from "../generated/graphql";

/** A test file as `mdp tests create` and `update` read it (YAML or JSON), with the options that override its fields. */

/** Request bodies over 1 MiB are refused by the gateway (docs/limits.md): no point reading a bigger file. */
const MAX_FILE_BYTES = 1024 * 1024;

/** The options that override a test file's fields. */
export interface TestOptions {
  id?: string;
  name?: string;
  category?: string;
  description?: string;
  state?: TestState;
  schedule?: string;
}

/** A test file as read: its fields (empty for a bare definition) and the definition's text as the server takes it. */
export interface TestFile {
  fields: Record<string, unknown>;
  definition: string;
  /** a field's value when it is a string */
  text: (key: string) => string | undefined;
}

export function readTestDocument(file: string): TestFile {
  let text: string;
  try {
    if (statSync(file).size > MAX_FILE_BYTES) throw usageError(`${file} is larger than the 1 MiB a request may carry`);
    text = readFileSync(file, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === undefined) throw error;
    throw usageError(`cannot read ${file}: ${(error as Error).message}`);
  }
  let parsed: unknown;
  try {
    parsed = parseYaml(text);
  } catch (error) {
    throw usageError(`${file} is not YAML or JSON: ${(error as Error).message.split("\n")[0]}`);
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
    throw usageError(`${file} must hold a test (name, category, definition) or a definition (on, rules)`);
  }
  const fields = parsed as Record<string, unknown>;
  // A whole test has a definition (an object, or its text); a bare definition goes to the server as written.
  const whole = "definition" in fields;
  const definition = whole
    ? typeof fields.definition === "string"
      ? fields.definition
      : JSON.stringify(fields.definition)
    : text;
  return {
    fields: whole ? fields : {},
    definition,
    text: (key) => (whole && typeof fields[key] === "string" ? (fields[key] as string) : undefined),
  };
}

/** What a file and the options set beside the definition: state, schedule, evaluation on change. */
export function runningFields(
  test: TestFile,
  options: TestOptions,
): Pick<CreateTestInput, "state" | "schedule" | "evaluateOnChange"> {
  const input: Pick<CreateTestInput, "state" | "schedule" | "evaluateOnChange"> = {
    // a file's state goes as written: the server refuses anything but ACTIVE or INACTIVE
    state: options.state ?? (test.text("state")?.toUpperCase() as TestState | undefined),
  };
  const fileCron = (test.fields.schedule as { cron?: unknown } | undefined)?.cron;
  const cron = options.schedule ?? (typeof fileCron === "string" ? fileCron : undefined);
  if (cron !== undefined) input.schedule = { cron };
  // as written: the server refuses anything but a boolean, naming the field
  if (test.fields.evaluateOnChange !== undefined) input.evaluateOnChange = test.fields.evaluateOnChange as boolean;
  return input;
}

export function readTestFile(file: string, options: TestOptions): CreateTestInput {
  const test = readTestDocument(file);
  const name = options.name ?? test.text("name");
  const category = options.category ?? test.text("category");
  if (!name) throw usageError(`the test needs a name: put it in ${file} or give --name`);
  if (!category) throw usageError(`the test needs a category: put it in ${file} or give --category`);
  return {
    id: options.id ?? test.text("id"),
    name,
    category,
    description: options.description ?? test.text("description"),
    definition: { json: test.definition },
    ...runningFields(test, options),
  };
}
