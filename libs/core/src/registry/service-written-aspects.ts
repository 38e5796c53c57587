/** The aspect in which metadata-test results are stored (evaluate with push: true, runTest). */
export const TEST_RESULTS_ASPECT = "testResults";

/**
 * Aspects only the service writes, each with what writes it. Clients read them but never ingest them: a testResults
 * ingested by hand would report tests as passing that never ran. Declared here, in code rather than in the entity
 * registry's YAML, so that a replaced registry (ENTITY_REGISTRY_PATH) cannot make them writable.
 */
export const SERVICE_WRITTEN_ASPECTS: ReadonlyMap<string, string> = new Map([
  [TEST_RESULTS_ASPECT, "metadata-test evaluation (evaluate with push: true, or runTest)"],
]);
