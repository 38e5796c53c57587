import { GraphQLError, Kind, type FragmentDefinitionNode, type SelectionSetNode, type ValidationRule } from "graphql";

export const MAX_DEPTH = 12;
export const MAX_FIELDS = 1000;

/**
 * Refuses documents nested deeper than MAX_DEPTH or selecting more than MAX_FIELDS fields (fragments expanded), so
 * one request cannot make the server do unbounded work. The schema has no costly per-field resolvers beyond these.
 */
export const queryLimits: ValidationRule = (context) => {
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const def of context.getDocument().definitions) {
    if (def.kind === Kind.FRAGMENT_DEFINITION) fragments.set(def.name.value, def);
  }
  return {
    OperationDefinition(operation) {
      let fields = 0;
      const walk = (set: SelectionSetNode, depth: number, seen: Set<string>): number => {
        let deepest = depth;
        for (const selection of set.selections) {
          if (selection.kind === Kind.FIELD) {
            fields++;
            if (selection.selectionSet) deepest = Math.max(deepest, walk(selection.selectionSet, depth + 1, seen));
          } else if (selection.kind === Kind.INLINE_FRAGMENT) {
            deepest = Math.max(deepest, walk(selection.selectionSet, depth, seen));
          } else {
            const fragment = fragments.get(selection.name.value);
            // A fragment cycle is reported by graphql's own NoFragmentCycles rule.
            if (fragment && !seen.has(fragment.name.value)) {
              deepest = Math.max(deepest, walk(fragment.selectionSet, depth, new Set([...seen, fragment.name.value])));
            }
          }
        }
        return deepest;
      };
      const depth = walk(operation.selectionSet, 1, new Set());
      if (depth > MAX_DEPTH) {
        context.reportError(new GraphQLError(`Query is nested ${depth} levels deep; the limit is ${MAX_DEPTH}.`));
      }
      if (fields > MAX_FIELDS) {
        context.reportError(new GraphQLError(`Query selects ${fields} fields; the limit is ${MAX_FIELDS}.`));
      }
    },
  };
};
