/** What the evaluator sees of an entity: its urn, its type, and the latest value of each of its aspects. */
export interface EntitySnapshot {
  urn: string;
  entityType: string;
  aspects: Record<string, unknown>;
}
