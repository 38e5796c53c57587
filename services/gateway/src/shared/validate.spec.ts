import { z } from "zod";
import { AppError, badInput } from "@mdp/core";
import { fieldPath, idField, parseArgs, parsedBy, rule, said, textField, urnField } from "./validate";

/** The error parseArgs throws for `args`, as a client sees it: code, message, details. */
function refusal(schema: z.ZodType, args: unknown) {
  try {
    parseArgs(schema, args);
  } catch (error) {
    if (error instanceof AppError) return { code: error.code, message: error.message, details: error.details };
    throw error;
  }
  throw new Error("parsed");
}

describe("parseArgs (a GraphQL operation's contract)", () => {
  it("names fields as the messages do: keys with dots, list items in brackets", () => {
    expect(fieldPath(["input", "actors", "users", 0])).toBe("input.actors.users[0]");
    expect(fieldPath(["urn"])).toBe("urn");
    expect(fieldPath([])).toBe("");
  });

  it("answers the first problem in the words the contract gives it, naming the field", () => {
    const schema = z.object({
      input: z.object({
        name: textField({ min: 1, max: 256, trim: true }),
        count: z.number().max(
          5,
          said((at) => `${at} must be at most 5`),
        ),
      }),
    });
    expect(refusal(schema, { input: { name: "  ", count: 9 } })).toEqual({
      code: "BAD_USER_INPUT",
      message: "input.name must be 1 to 256 characters long",
      details: undefined,
    });
    expect(refusal(schema, { input: { name: "a", count: 9 } }).message).toBe("input.count must be at most 5");
    expect(parseArgs(schema, { input: { name: " a ", count: 1 } })).toEqual({ input: { name: "a", count: 1 } });
  });

  it("keeps a hand check's own error, details included, at the field's path", () => {
    const schema = z.object({ input: z.object({ users: z.array(urnField("corpuser")), tokenId: idField() }) });
    expect(refusal(schema, { input: { users: ["urn:li:corpuser:a", "bob"], tokenId: "t" } })).toEqual({
      code: "BAD_USER_INPUT",
      message: "Invalid urn in 'input.users[1]': 'bob' (must start with 'urn:')",
      details: { field: "input.users[1]", value: "bob" },
    });
    expect(refusal(schema, { input: { users: [], tokenId: "x".repeat(257) } })).toEqual({
      code: "BAD_USER_INPUT",
      message: "input.tokenId is longer than the limit of 256 characters",
      details: { field: "input.tokenId", limit: 256 },
    });
  });

  it("converts with parsedBy, refusing as the converter throws and passing its result on", () => {
    const even = z.number().transform(
      parsedBy((at, n: number) => {
        if (n % 2) throw badInput(`${at} must be even`);
        return n / 2;
      }),
    );
    const schema = z.object({ halves: z.array(even) });
    expect(parseArgs(schema, { halves: [2, 8] })).toEqual({ halves: [1, 4] });
    expect(refusal(schema, { halves: [2, 3] }).message).toBe("halves[1] must be even");
  });

  it("words a problem the contract leaves unworded as the field and zod's words", () => {
    expect(refusal(z.object({ urn: z.string() }), { urn: 5 }).message).toMatch(/^urn: Invalid input/);
  });

  it("lets an error that is not bad input through: a rule's check that fails otherwise is a bug, not a 400", () => {
    const schema = z.object({
      a: z.string().refine(
        ...rule(() => {
          throw new Error("boom");
        }),
      ),
    });
    expect(() => parseArgs(schema, { a: "x" })).toThrow("boom");
  });
});
