/**
 * The action catalogue: what a test does to an entity when its result is pushed (`actions: {passing, failing}`), in
 * DataHub's terms (metadata-io's ActionType and its appliers): each action is `{type, params}`, params a map of string
 * lists, and writes one of DataHub's aspects. Parsing (action.parser.ts) and planning (action-planner.ts) are pure; the
 * evaluation worker writes what a plan says.
 */

/** What one parameter of an action takes. */
export interface ParamSpec {
  required: boolean;
  /** the urn entity types its values must have; unset: free text */
  urnTypes?: readonly string[];
  /** at most this many values (unset: DEFINITION_LIMITS.valuesPerAction) */
  max?: number;
  /** the values it may take (unset: any) */
  oneOf?: readonly string[];
}

/** DataHub's OwnershipType values an owner may be added with (CUSTOM needs a type urn, which actions cannot give). */
export const OWNERSHIP_TYPES = [
  "TECHNICAL_OWNER",
  "BUSINESS_OWNER",
  "DATA_STEWARD",
  "NONE",
  "DEVELOPER",
  "DATAOWNER",
  "DELEGATE",
  "PRODUCER",
  "CONSUMER",
  "STAKEHOLDER",
] as const;

/** The ownership type ADD_OWNERS gives when its params name none. */
export const DEFAULT_OWNERSHIP_TYPE = "TECHNICAL_OWNER";

/** The note DEPRECATE writes when its params give none (DataHub's DeprecateAbstractAction writes this one). */
export const DEFAULT_DEPRECATION_NOTE = "Deprecated via metadata tests";

/** The aspects actions write, each DataHub's. */
export type ActionAspect = "globalTags" | "glossaryTerms" | "ownership" | "domains" | "deprecation";

interface ActionSpec {
  aspect: ActionAspect;
  params: Readonly<Record<string, ParamSpec>>;
}

const urns = (...types: string[]): ParamSpec => ({ required: true, urnTypes: types });

/** Every action type this service runs, with the aspect it writes and its params. Names as DataHub's ActionType. */
export const ACTION_TYPES: Readonly<Record<string, ActionSpec>> = {
  ADD_TAGS: { aspect: "globalTags", params: { values: urns("tag") } },
  REMOVE_TAGS: { aspect: "globalTags", params: { values: urns("tag") } },
  ADD_GLOSSARY_TERMS: { aspect: "glossaryTerms", params: { values: urns("glossaryTerm") } },
  REMOVE_GLOSSARY_TERMS: { aspect: "glossaryTerms", params: { values: urns("glossaryTerm") } },
  ADD_OWNERS: {
    aspect: "ownership",
    params: {
      values: urns("corpuser", "corpGroup"),
      ownerType: { required: false, max: 1, oneOf: OWNERSHIP_TYPES },
    },
  },
  REMOVE_OWNERS: { aspect: "ownership", params: { values: urns("corpuser", "corpGroup") } },
  SET_DOMAIN: { aspect: "domains", params: { values: { ...urns("domain"), max: 1 } } },
  UNSET_DOMAIN: { aspect: "domains", params: {} },
  DEPRECATE: { aspect: "deprecation", params: { note: { required: false, max: 1 } } },
  UN_DEPRECATE: { aspect: "deprecation", params: {} },
};

/** The aspect an action type writes. */
export function aspectOfAction(type: string): ActionAspect {
  return ACTION_TYPES[type]!.aspect;
}

/** An action's params in its type's declared order. */
export function orderedParams(type: string, params: Readonly<Record<string, string[]>>): Record<string, string[]> {
  const names = Object.keys(ACTION_TYPES[type]?.params ?? {});
  return Object.fromEntries(names.filter((name) => params[name] !== undefined).map((name) => [name, params[name]!]));
}
