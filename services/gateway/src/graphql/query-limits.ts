import { GraphQLError, Kind, type FragmentDefinitionNode, type SelectionSetNode, type ValidationRule } from "graphql";

export const MAX_DEPTH = 12;
/**
 * Introspection (`__schema`, `__type`) walks type references nested `ofType` in `ofType`: the standard query that
 * GraphiQL, Apollo Sandbox and code generators send (graphql-js' getIntrospectionQuery) is 15 levels deep.
 */
export const MAX_INTROSPECTION_DEPTH = 20;
export const MAX_FIELDS = 1000;

/**
 * Refuses documents nested deeper than MAX_DEPTH (MAX_INTROSPECTION_DEPTH under an introspection field) or selecting
 * more than MAX_FIELDS fields (fragments expanded), so one request cannot make the server do unbounded work. The
 * schema has no costly per-field resolvers beyond these.
 */
export const queryLimits: ValidationRule = (context) => {
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const def of context.getDocument().definitions) {
    if (def.kind === Kind.FRAGMENT_DEFINITION) fragments.set(def.name.value, def);
  }
  return {
    OperationDefinition(operation) {
      let fields = 0;
      const deepest = { data: 0, introspection: 0 };
      const walk = (set: SelectionSetNode, depth: number, introspection: boolean, seen: Set<string>): void => {
        const kind = introspection ? "introspection" : "data";
        deepest[kind] = Math.max(deepest[kind], depth);
        for (const selection of set.selections) {
          if (selection.kind === Kind.FIELD) {
            fields++;
            if (selection.selectionSet) {
              const entersIntrospection = introspection || selection.name.value.startsWith("__");
              walk(selection.selectionSet, depth + 1, entersIntrospection, seen);
            }
          } else if (selection.kind === Kind.INLINE_FRAGMENT) {
            walk(selection.selectionSet, depth, introspection, seen);
          } else {
            const fragment = fragments.get(selection.name.value);
            // A fragment cycle is reported by graphql's own NoFragmentCycles rule.
            if (fragment && !seen.has(fragment.name.value)) {
              walk(fragment.selectionSet, depth, introspection, new Set([...seen, fragment.name.value]));
            }
          }
        }
      };
      walk(operation.selectionSet, 1, false, new Set());
      if (deepest.data > MAX_DEPTH) {
        context.reportError(
          new GraphQLError(`Query is nested ${deepest.data} levels deep; the limit is ${MAX_DEPTH}.`),
        );
      }
      if (deepest.introspection > MAX_INTROSPECTION_DEPTH) {
        context.reportError(
          new GraphQLError(
            `Introspection is nested ${deepest.introspection} levels deep; the limit is ${MAX_INTROSPECTION_DEPTH}.`,
          ),
        );
      }
      if (fields > MAX_FIELDS) {
        context.reportError(new GraphQLError(`Query selects ${fields} fields; the limit is ${MAX_FIELDS}.`));
      }
    },
  };
};
