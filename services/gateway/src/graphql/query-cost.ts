import {
  getNamedType,
  getNullableType,
  isCompositeType,
  isInputObjectType,
  isListType,
  isObjectType,
  isInterfaceType,
  Kind,
  type DocumentNode,
  type FieldNode,
  type GraphQLArgument,
  type GraphQLCompositeType,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type SelectionSetNode,
  type ValueNode,
} from "graphql";
import { limitError } from "./query-limits";

/** The most a request may cost; one full page (count 1000) of any list is about 1,000. */
export const MAX_COST = 5000;
/** Page-size arguments: on a list field, or on the field (or its `input`) that returns the object holding the list. */
const PAGE_SIZE_ARGUMENTS = ["count", "limit", "first", "last"];
/** The size assumed for a list of objects whose size no argument states (a test's results, its failed rules). */
export const DEFAULT_LIST_SIZE = 20;
/**
 * Scalar fields that can be large cost what they weigh, about 1 per 4 KiB at their largest (a scalar otherwise costs
 * 0): a test's definition text is at most 64 KiB and its normalized JSON 128 KiB (DEFINITION_LIMITS), so a page of
 * 1,000 tests with definitions (32,000+) is refused while a page of 100 (~3,200, or ~4,700 with both) fits, and one
 * request carries at most ~20 MB of definitions.
 */
export const FIELD_COSTS: Readonly<Record<string, number>> = {
  "TestDefinition.json": 15,
  "TestDefinition.normalized": 30,
  // A statement of its own per test (counting the test's entities, reading its runs), on top of the object's 1: a
  // page of 1,000 tests selecting either is refused, a page of 100 fits.
  "Test.results": 5,
  "Test.batchRunEvents": 5,
};
/** A mutation writes and audits: each top-level mutation field costs this much on top of what it selects. */
export const MUTATION_COST = 10;

/**
 * What executing an operation may cost, with the request's variables (Shopify's model): a scalar 0 (FIELD_COSTS for
 * the large ones), an object 1, a list of objects 2 + size × (1 + what each selects), aliases and fragments summed
 * wherever they appear. A list's size
 * is the page size its own arguments, or those of the field above it, ask for (literal or variable; the argument's
 * default when absent), else DEFAULT_LIST_SIZE. Introspection is free: it reads the schema in memory, and its depth
 * and fields are bounded by the document limits.
 */
export function operationCost(
  schema: GraphQLSchema,
  document: DocumentNode,
  operation: OperationDefinitionNode,
  variables: Record<string, unknown>,
): number {
  const fragments = new Map(
    document.definitions.flatMap((def) => (def.kind === Kind.FRAGMENT_DEFINITION ? [[def.name.value, def]] : [])),
  );
  // A fragment's cost depends only on the page size handed down into it: measured once per (fragment, size).
  const memo = new Map<string, number>();
  const setCost = (set: SelectionSetNode, parent: GraphQLCompositeType, pageSize: number | undefined): number => {
    let cost = 0;
    for (const selection of set.selections) {
      if (selection.kind === Kind.FIELD) {
        cost += fieldCost(selection, parent, pageSize);
      } else if (selection.kind === Kind.INLINE_FRAGMENT) {
        const type = selection.typeCondition ? schema.getType(selection.typeCondition.name.value) : parent;
        if (type && isCompositeType(type)) cost += setCost(selection.selectionSet, type, pageSize);
      } else {
        const fragment = fragments.get(selection.name.value);
        const type = fragment && schema.getType(fragment.typeCondition.name.value);
        if (!fragment || !type || !isCompositeType(type)) continue;
        const key = `${fragment.name.value}\u0000${pageSize}`;
        let known = memo.get(key);
        if (known === undefined) {
          memo.set(key, 0); // a cycle is refused by validation; this only stops a loop
          known = setCost(fragment.selectionSet, type, pageSize);
          memo.set(key, known);
        }
        cost += known;
      }
    }
    return cost;
  };
  const fieldCost = (node: FieldNode, parent: GraphQLCompositeType, pageSize: number | undefined): number => {
    if (node.name.value.startsWith("__")) return 0;
    if (!node.selectionSet) return FIELD_COSTS[`${parent.name}.${node.name.value}`] ?? 0;
    const field = isObjectType(parent) || isInterfaceType(parent) ? parent.getFields()[node.name.value] : undefined;
    if (!field) return 0;
    const named = getNamedType(field.type);
    if (!isCompositeType(named)) return 0;
    const own = pageSizeOf(node, field.args, variables);
    if (isListType(getNullableType(field.type))) {
      const size = own ?? pageSize ?? DEFAULT_LIST_SIZE;
      return 2 + size * (1 + setCost(node.selectionSet, named, undefined));
    }
    // An object holding a page (listAccessTokens → tokens): its page size is handed to the list inside it.
    const read = FIELD_COSTS[`${parent.name}.${node.name.value}`] ?? 0;
    return read + 1 + setCost(node.selectionSet, named, own ?? pageSize);
  };
  const root = operation.operation === "mutation" ? schema.getMutationType() : schema.getQueryType();
  if (!root) return 0;
  let cost = setCost(operation.selectionSet, root, undefined);
  if (operation.operation === "mutation") cost += MUTATION_COST * operation.selectionSet.selections.length;
  return cost;
}

/** The page size a field's arguments ask for: `count: 5`, `input: {count: $n}`, `input: $input`, or a default. */
function pageSizeOf(
  node: FieldNode,
  args: readonly GraphQLArgument[],
  variables: Record<string, unknown>,
): number | undefined {
  const value = (v: ValueNode | undefined): unknown => {
    if (!v) return undefined;
    if (v.kind === Kind.VARIABLE) return variables[v.name.value];
    if (v.kind === Kind.INT) return Number(v.value);
    if (v.kind === Kind.OBJECT) return Object.fromEntries(v.fields.map((f) => [f.name.value, value(f.value)]));
    return undefined;
  };
  for (const arg of args) {
    const given = value(node.arguments?.find((a) => a.name.value === arg.name)?.value);
    if (PAGE_SIZE_ARGUMENTS.includes(arg.name)) return sizeOf(given ?? arg.defaultValue);
    const input = getNullableType(arg.type);
    if (!isInputObjectType(input)) continue;
    for (const name of PAGE_SIZE_ARGUMENTS) {
      const inner = input.getFields()[name];
      if (!inner) continue;
      const object = given !== null && typeof given === "object" ? (given as Record<string, unknown>) : {};
      return sizeOf(object[name] ?? inner.defaultValue);
    }
  }
  return undefined;
}

/** Sizes the resolver will refuse (negative, not a number) cost nothing here: the resolver's error names them. */
const sizeOf = (value: unknown): number | undefined =>
  typeof value === "number" && Number.isFinite(value) ? Math.max(0, value) : undefined;

/**
 * The cost of operations that declare no variables, by their node: such a cost depends on the document alone, and a
 * repeated query text is the same node every time (Apollo's document cache), so it is walked once. An operation with
 * variables is costed on every request, with them. Weak keys: the entry goes with its document.
 */
const costWithoutVariables = new WeakMap<OperationDefinitionNode, number>();

/**
 * Refuses, before any resolver runs, an operation costing more than MAX_COST, naming its cost and the limit.
 * Validation rules are cached per document and never see variables, so this runs per request, once the operation
 * is known.
 */
export function refuseCostlyOperation(
  schema: GraphQLSchema,
  document: DocumentNode,
  operation: OperationDefinitionNode,
  variables: Record<string, unknown>,
): void {
  let cost: number;
  if (operation.variableDefinitions?.length) cost = operationCost(schema, document, operation, variables);
  else {
    const known = costWithoutVariables.get(operation);
    cost = known ?? operationCost(schema, document, operation, {});
    if (known === undefined) costWithoutVariables.set(operation, cost);
  }
  if (cost > MAX_COST) {
    const shown = Number.isSafeInteger(cost) ? String(cost) : "more than 2^53";
    throw limitError(`Query costs ${shown}; the limit is ${MAX_COST}.`, {
      cost: { requested: Number.isFinite(cost) ? cost : null, limit: MAX_COST },
    });
  }
}
