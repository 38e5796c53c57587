/** Every operator a property predicate may use, in the order error messages list them. */
export const OPERATORS = [
  "equals",
  "starts_with",
  "contains_str",
  "contains_any",
  "regex_match",
  "greater_than",
  "less_than",
  "exists",
  "is_true",
  "is_false",
] as const;

export type Operator = (typeof OPERATORS)[number];

/**
 * What an operator compares the entity against, which decides whether `value` or `values` is accepted:
 * - `none`: only the entity is looked at (`exists`, `is_true`, `is_false`);
 * - `threshold`: one numeric `value` (a list of thresholds would be ambiguous);
 * - `list`: `values`, because the operator's name promises "any of a list";
 * - `any-of`: `value`, or `values` meaning "any of them".
 */
export type OperandShape = "none" | "threshold" | "list" | "any-of";

export const OPERAND_SHAPE: Readonly<Record<Operator, OperandShape>> = {
  equals: "any-of",
  starts_with: "any-of",
  contains_str: "any-of",
  contains_any: "list",
  regex_match: "any-of",
  greater_than: "threshold",
  less_than: "threshold",
  exists: "none",
  is_true: "none",
  is_false: "none",
};

export function isOperator(name: string): name is Operator {
  return (OPERATORS as readonly string[]).includes(name);
}
