/** What the EntityChangeEvent_v1 tests share (entity-change-events*.int.spec.ts): the rows they read. */

export const DAY = 86_400_000;
export const SYSTEM = "urn:li:corpuser:__datahub_system";

export interface EventRow {
  entity_urn: string;
  category: string;
  subject_actor: string | null;
  payload: {
    operation: string;
    modifier?: string;
    parameters?: Record<string, unknown>;
    auditStamp: { actor: string };
    version: number;
  };
}
