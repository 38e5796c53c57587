/** What the DataHub tests UI tests share (datahub-tests-ui-*.int.spec.ts): the documents they send and the entities they read. */
import { verbatimOperations } from "../fixtures/datahub/operations";

export const SMOKE = verbatimOperations("smoke-tests.graphql");
export const TERRAFORM = verbatimOperations("terraform-metadata-tests.graphql");
export const UI = verbatimOperations("tests-ui-inferred.graphql");

export const DESCRIBED = "urn:li:dataset:(urn:li:dataPlatform:hive,db.described,PROD)";
export const BARE = "urn:li:dataset:(urn:li:dataPlatform:hive,db.bare,PROD)";
export const CHART = "urn:li:chart:(looker,ui)";
export const HOG = "urn:li:dataset:(urn:li:dataPlatform:hive,db.ui_hog,PROD)";
export const VIEWER = "urn:li:corpuser:ui-viewer";
export const MANAGER = "urn:li:corpuser:ui-manager";
/** may manage tests, not write tags */
export const TESTER = "urn:li:corpuser:ui-tester";
export const TIME_LIMIT_MS = 1000;

export const definition = (rules: unknown, extra: Record<string, unknown> = {}) =>
  JSON.stringify({ on: { types: ["dataset"] }, rules, ...extra });
export const HAS_DESCRIPTION = definition({ property: "datasetProperties.description", operator: "exists" });
export const PII_TAG = "urn:li:tag:needs-description";
/** Tags what fails it: DEFAULT applies this, EVALUATE_ONLY does not. */
export const TAGS_UNDESCRIBED = definition(
  { property: "datasetProperties.description", operator: "exists" },
  { actions: { failing: [{ type: "ADD_TAGS", params: { values: [PII_TAG] } }] } },
);

export const aspect = (entityUrn: string, aspectName: string, value: unknown) => ({
  entityType: entityUrn.split(":")[2],
  entityUrn,
  aspectName,
  changeType: "UPSERT",
  aspect: { contentType: "application/json", value: JSON.stringify(value) },
});
