/** What the test action tests share (test-actions*.int.spec.ts): entities, definitions and the aspects actions write. */

export const DATASET = (name: string) => `urn:li:dataset:(urn:li:dataPlatform:hive,db.${name},PROD)`;
export const NEW = DATASET("new_orders");
export const BATCHED = DATASET("batched");
export const RUN_1 = DATASET("run_1");
export const RUN_2 = DATASET("run_2");
export const BROKEN = DATASET("broken");
export const ANN = "urn:li:corpuser:ann";
export const STEWARDS = "urn:li:corpGroup:stewards";
export const NEEDS_DOC = "urn:li:tag:needs-doc";
export const UNDOCUMENTED = "urn:li:glossaryTerm:undocumented";
export const QUARANTINE = "urn:li:domain:quarantine";
export const FLAG = "urn:li:test:flag-undocumented";
export const CLEAR = "urn:li:test:clear-documented";
export const ACTION_ASPECTS = ["globalTags", "glossaryTerms", "ownership", "domains", "deprecation"];

export const DESCRIBED = { property: "datasetProperties.description", operator: "exists" };
/** Fails without a description, and then marks the dataset in every way an action can. */
export const FLAG_DEFINITION = `
on: {types: [dataset]}
rules: [{property: datasetProperties.description, operator: exists}]
actions:
  failing:
    - {type: ADD_TAGS, values: [${NEEDS_DOC}]}
    - {type: add_glossary_terms, params: {values: [${UNDOCUMENTED}]}}
    - {type: ADD_OWNERS, values: [${STEWARDS}], ownerType: DATA_STEWARD}
    - {type: SET_DOMAIN, values: ${QUARANTINE}}
    - {type: DEPRECATE, note: no description}
`;
/** Passes with a description, and then takes every mark back. */
export const CLEAR_DEFINITION = JSON.stringify({
  on: { types: ["dataset"] },
  rules: [DESCRIBED],
  actions: {
    passing: [
      { type: "REMOVE_TAGS", values: [NEEDS_DOC] },
      { type: "REMOVE_GLOSSARY_TERMS", values: [UNDOCUMENTED] },
      { type: "REMOVE_OWNERS", values: [STEWARDS] },
      { type: "UNSET_DOMAIN" },
      { type: "UNDEPRECATE" },
    ],
  },
});

export const CREATE = `mutation($input: CreateTestInput!) { createTest(input: $input) }`;
export const UPDATE = `mutation($urn: String!, $input: UpdateTestInput!) { updateTest(urn: $urn, input: $input) }`;
export const RUN = `mutation($urn: String!, $push: Boolean) { runTest(urn: $urn, push: $push) }`;
export const AUDIT = `query($input: ListAuditEventsInput!) {
  listAuditEvents(input: $input) { total events { actorUrn action targetUrn details } }
}`;

export interface Action {
  type: string;
  params: Record<string, string[]>;
  wouldChange: boolean;
}
export interface Evaluation {
  passing: Array<{ test: string; actions?: Action[] }>;
  failing: Array<{ test: string; actions?: Action[] }>;
}

export const proposal = (entityUrn: string, aspectName: string, value: unknown) => ({
  entityType: "dataset",
  entityUrn,
  aspectName,
  changeType: "UPSERT",
  aspect: { contentType: "application/json", value: JSON.stringify(value) },
});
