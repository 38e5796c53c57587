import { GraphQLError, Kind, type FragmentDefinitionNode, type SelectionSetNode, type ValidationRule } from "graphql";

export const MAX_DEPTH = 12;
/**
 * Introspection (`__schema`, `__type`) walks type references nested `ofType` in `ofType`: the standard query that
 * GraphiQL, Apollo Sandbox and code generators send (graphql-js' getIntrospectionQuery) is 15 levels deep.
 */
export const MAX_INTROSPECTION_DEPTH = 20;
export const MAX_FIELDS = 1000;

/** What a selection set comes to: its fields (fragments expanded), and how many levels below it each kind reaches. */
interface Extent {
  fields: number;
  /** levels below the set reached by data fields (0: the set itself; -Infinity: none) */
  data: number;
  /** the same for fields under an introspection field */
  introspection: number;
}

/**
 * Refuses documents nested deeper than MAX_DEPTH (MAX_INTROSPECTION_DEPTH under an introspection field) or selecting
 * more than MAX_FIELDS fields (fragments expanded), so one request cannot make the server do unbounded work. The
 * schema has no costly per-field resolvers beyond these.
 *
 * Each fragment is measured once (per kind of field it sits under) and its extent reused wherever it is spread: a
 * document of a few lines whose fragments each spread the one below twice selects 2^40 fields, and expanding it spread
 * by spread would hold the event loop for days.
 */
export const queryLimits: ValidationRule = (context) => {
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const def of context.getDocument().definitions) {
    if (def.kind === Kind.FRAGMENT_DEFINITION) fragments.set(def.name.value, def);
  }
  const measured = new Map<string, Extent | "measuring">();
  const measure = (set: SelectionSetNode, introspection: boolean): Extent => {
    const extent: Extent = { fields: 0, data: -Infinity, introspection: -Infinity };
    extent[introspection ? "introspection" : "data"] = 0;
    const add = (inner: Extent, levels: number) => {
      extent.fields += inner.fields;
      extent.data = Math.max(extent.data, inner.data + levels);
      extent.introspection = Math.max(extent.introspection, inner.introspection + levels);
    };
    for (const selection of set.selections) {
      if (selection.kind === Kind.FIELD) {
        extent.fields++;
        if (selection.selectionSet) {
          add(measure(selection.selectionSet, introspection || selection.name.value.startsWith("__")), 1);
        }
      } else if (selection.kind === Kind.INLINE_FRAGMENT) {
        add(measure(selection.selectionSet, introspection), 0);
      } else {
        const fragment = fragments.get(selection.name.value);
        const key = `${selection.name.value}\u0000${introspection}`;
        const known = measured.get(key);
        // A fragment cycle ("measuring" again) is reported by graphql's own NoFragmentCycles rule.
        if (!fragment || known === "measuring") continue;
        if (known) {
          add(known, 0);
        } else {
          measured.set(key, "measuring");
          const inner = measure(fragment.selectionSet, introspection);
          measured.set(key, inner);
          add(inner, 0);
        }
      }
    }
    return extent;
  };
  return {
    OperationDefinition(operation) {
      const extent = measure(operation.selectionSet, false);
      const deepest = { data: 1 + extent.data, introspection: 1 + extent.introspection };
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
      if (extent.fields > MAX_FIELDS) {
        const fields = Number.isSafeInteger(extent.fields) ? String(extent.fields) : "more than 2^53";
        context.reportError(new GraphQLError(`Query selects ${fields} fields; the limit is ${MAX_FIELDS}.`));
      }
    },
  };
};
