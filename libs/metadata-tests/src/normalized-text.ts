import { isPropertyPredicate, type ParsedDefinition, type Predicate, type TestAction } from "./definition.types";
import { orderedParams } from "./action-catalogue";

/**
 * A stored normalized definition as JSON text, keys in the parser's canonical order (PostgreSQL's jsonb sorts them
 * otherwise). No validation and no regex compiling: the definition was validated when it was stored, and showing a
 * page of tests must not recompile every pattern on the gateway's event loop.
 */
export function normalizedDefinitionText(stored: ParsedDefinition): string {
  const predicate = (p: Predicate): unknown => {
    if (isPropertyPredicate(p)) return { property: p.property, operator: p.operator, value: p.value, values: p.values };
    if ("not" in p) return { not: predicate(p.not) };
    return "and" in p ? { and: p.and.map(predicate) } : { or: p.or.map(predicate) };
  };
  const on = { types: stored.on.types, conditions: stored.on.conditions && predicate(stored.on.conditions) };
  const action = (a: TestAction) => ({ type: a.type, params: orderedParams(a.type, a.params) });
  const actions = stored.actions && {
    passing: stored.actions.passing.map(action),
    failing: stored.actions.failing.map(action),
  };
  // JSON.stringify leaves out the keys whose value is undefined, as the parser never sets them.
  return JSON.stringify({ on, rules: predicate(stored.rules), actions });
}
