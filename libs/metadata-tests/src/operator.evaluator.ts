import { expectedValues, type PropertyPredicate } from "./definition.types";
import type { ResolvedValues } from "./property-path";
import { compileRegex } from "./regex-cache";
import { asBoolean, asNumber, asText, scalarEquals } from "./value-coercion";

/**
 * Whether the values a property resolved to satisfy a leaf predicate. A property that fans out to several values
 * satisfies it when ANY of them does (DataHub's reading of "owners.type equals DATAOWNER": some owner is one); a
 * property with no value satisfies nothing, so `exists` is false and `not` of anything is true.
 */
export function satisfies(predicate: PropertyPredicate, resolved: ResolvedValues): boolean {
  const expected = expectedValues(predicate);
  const { values } = resolved;
  const texts = () => values.map(asText).filter((text): text is string => text !== undefined);
  const numbers = () => values.map(asNumber).filter((number): number is number => number !== undefined);
  switch (predicate.operator) {
    case "exists":
      return values.length > 0;
    case "equals":
      return values.some((value) => expected.some((operand) => scalarEquals(value, operand)));
    case "starts_with":
      return texts().some((text) => expected.some((operand) => text.startsWith(operand)));
    case "contains_str":
      return texts().some((text) => expected.some((operand) => text.includes(operand)));
    case "contains_any":
      // A collection (tags, owners) contains an element; a single string contains a substring.
      return resolved.fannedOut
        ? values.some((value) => expected.some((operand) => scalarEquals(value, operand)))
        : texts().some((text) => expected.some((operand) => text.includes(operand)));
    case "regex_match":
      return texts().some((text) => expected.some((operand) => compileRegex(operand).test(text)));
    case "greater_than":
      return numbers().some((number) => number > threshold(expected));
    case "less_than":
      return numbers().some((number) => number < threshold(expected));
    case "is_true":
      return values.some((value) => asBoolean(value) === true);
    case "is_false":
      return values.some((value) => asBoolean(value) === false);
  }
}

function threshold(expected: readonly string[]): number {
  // The parser guarantees one numeric operand; NaN (never compares true) keeps a corrupt definition failing closed.
  return asNumber(expected[0]) ?? Number.NaN;
}
