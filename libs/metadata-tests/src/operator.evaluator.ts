import { expectedValues, type PropertyPredicate } from "./definition.types";
import type { ResolvedValues } from "./property-path";
import { regexMatches } from "./regex-cache";
import { asBoolean, asDecimal, asText, compareDecimals, scalarEquals } from "./value-coercion";

/**
 * Whether the values a property resolved to satisfy a leaf predicate. A property that fans out to several values
 * satisfies it when ANY of them does (DataHub's reading of "owners.type equals DATAOWNER": some owner is one); a
 * property with no value satisfies nothing, so `exists` is false and `not` of anything is true.
 */
export function satisfies(predicate: PropertyPredicate, resolved: ResolvedValues): boolean {
  const expected = expectedValues(predicate);
  const { values } = resolved;
  const texts = () => values.map(asText).filter((text): text is string => text !== undefined);
  // Against the one numeric operand the parser guarantees, exactly (see compareDecimals); none compares when a corrupt
  // definition has none, so it fails closed.
  const compared = () => {
    const threshold = asDecimal(expected[0]);
    if (threshold === undefined) return [];
    return values
      .map(asDecimal)
      .filter((number): number is string => number !== undefined)
      .map((number) => compareDecimals(number, threshold));
  };
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
      return texts().some((text) => expected.some((operand) => regexMatches(operand, text)));
    case "greater_than":
      return compared().some((order) => order > 0);
    case "less_than":
      return compared().some((order) => order < 0);
    case "is_true":
      return values.some((value) => asBoolean(value) === true);
    case "is_false":
      return values.some((value) => asBoolean(value) === false);
  }
}
