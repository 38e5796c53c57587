import { ApolloArmor } from "@escape.tech/graphql-armor";
import { GraphQLError, Kind, type FragmentDefinitionNode, type SelectionSetNode, type ValidationRule } from "graphql";
import { ERROR_CODES } from "@mdp/core";

/** Field nesting, fragments flattened; introspection (`__schema`) is exempt and bounded by MAX_NESTING instead. */
export const MAX_DEPTH = 12;
export const MAX_ALIASES = 15;
export const MAX_DIRECTIVES = 10;
/** Fields selected, every fragment spread expanded. */
export const MAX_FIELDS = 1000;
/**
 * Fields of one response name in one selection set. graphql-js' OverlappingFieldsCanBeMerged compares them pairwise:
 * 490 copies of `me { urn }` (under 2,000 tokens) took it 280 ms; 20 copies take nothing.
 */
export const MAX_SAME_NAME_FIELDS = 20;

/** A caller's document over a limit: BAD_USER_INPUT, HTTP 400, whichever Apollo stage raises it. */
export function limitError(message: string, extensions: Record<string, unknown> = {}): GraphQLError {
  const { status, graphql } = ERROR_CODES.BAD_USER_INPUT;
  return new GraphQLError(message, { extensions: { code: graphql, http: { status }, ...extensions } });
}

/**
 * Whether the served schema answers introspection (README: it does; GraphiQL's docs pane reads it). Suggestions go with
 * it: graphql-js' "Did you mean …" reveals no more than introspection does, and would let a caller without it map the
 * schema, so armor masks them (`[Suggestion hidden]`) exactly when introspection is off.
 */
export const INTROSPECTION = true;

/**
 * graphql-armor's depth, alias and directive limits (validation rules, messages naming the limit), and its masking of
 * suggestions when introspection is off (INTROSPECTION). Armor's token limit
 * re-parses every document, so the parser's own limit is used instead (document-limits.ts); its cost limit prices
 * lists only by literal `first`/`last` and never sees variables, so cost is query-cost.ts's, per request.
 */
export const armor = new ApolloArmor({
  maxDepth: { n: MAX_DEPTH, flattenFragments: true, ignoreIntrospection: true, exposeLimits: true },
  maxAliases: { n: MAX_ALIASES, exposeLimits: true },
  maxDirectives: { n: MAX_DIRECTIVES, exposeLimits: true },
  blockFieldSuggestion: { enabled: !INTROSPECTION },
  maxTokens: { enabled: false },
  costLimit: { enabled: false },
}).protect();

/** What a selection set comes to, fragments expanded: its fields, and the most fields sharing one response name. */
interface Extent {
  fields: number;
  sameName: number;
}

/**
 * Refuses, before any other validation rule has looked at the document, one selecting more than MAX_FIELDS fields
 * (fragments expanded; armor counts no fields) or repeating a response name more than MAX_SAME_NAME_FIELDS times in
 * one selection set. It measures the whole document on entering it, each fragment once however often it is spread (a
 * few lines of fragments each spreading the next twice select 2^40 fields). graphql-js runs every rule in one walk, so
 * reporting alone would still let the quadratic rule above run to its end; a thrown error would be Apollo's 500.
 */
export const queryLimits: ValidationRule = (context) => ({
  Document(document) {
    const fragments = new Map<string, FragmentDefinitionNode>();
    for (const def of document.definitions) {
      if (def.kind === Kind.FRAGMENT_DEFINITION) fragments.set(def.name.value, def);
    }
    const measured = new Map<string, Extent | "measuring">();
    const measure = (set: SelectionSetNode): Extent => {
      const extent: Extent = { fields: 0, sameName: 0 };
      const names = new Map<string, number>();
      // Inline fragments' fields merge into the set's own, as graphql-js compares them.
      const walk = (inner: SelectionSetNode) => {
        for (const selection of inner.selections) {
          if (selection.kind === Kind.FIELD) {
            extent.fields++;
            const name = (selection.alias ?? selection.name).value;
            const count = (names.get(name) ?? 0) + 1;
            names.set(name, count);
            extent.sameName = Math.max(extent.sameName, count);
            if (selection.selectionSet) add(measure(selection.selectionSet));
          } else if (selection.kind === Kind.INLINE_FRAGMENT) {
            walk(selection.selectionSet);
          } else {
            const inner = fragmentExtent(selection.name.value);
            if (inner) add(inner);
          }
        }
      };
      const add = (inner: Extent) => {
        extent.fields += inner.fields;
        extent.sameName = Math.max(extent.sameName, inner.sameName);
      };
      walk(set);
      return extent;
    };
    const fragmentExtent = (name: string): Extent | undefined => {
      const fragment = fragments.get(name);
      const known = measured.get(name);
      // A fragment cycle ("measuring" again) is reported by graphql's own NoFragmentCycles rule.
      if (!fragment || known === "measuring") return undefined;
      if (known) return known;
      measured.set(name, "measuring");
      const extent = measure(fragment.selectionSet);
      measured.set(name, extent);
      return extent;
    };
    for (const def of document.definitions) {
      let extent: Extent | undefined;
      if (def.kind === Kind.OPERATION_DEFINITION) extent = measure(def.selectionSet);
      else if (def.kind === Kind.FRAGMENT_DEFINITION) extent = fragmentExtent(def.name.value);
      if (!extent) continue;
      let refusal: string | undefined;
      if (extent.fields > MAX_FIELDS) {
        const fields = Number.isSafeInteger(extent.fields) ? String(extent.fields) : "more than 2^53";
        refusal = `Query selects ${fields} fields; the limit is ${MAX_FIELDS}.`;
      } else if (extent.sameName > MAX_SAME_NAME_FIELDS) {
        refusal = `Query selects one field ${extent.sameName} times in one selection; the limit is ${MAX_SAME_NAME_FIELDS}.`;
      }
      if (refusal) {
        context.reportError(limitError(refusal));
        // The walk goes on in the document a visitor returns: an empty one, so no later rule looks at this one.
        return { ...document, definitions: [] };
      }
    }
    return undefined;
  },
});
