/** What the evaluation result tests share (evaluation-result-bounds, evaluation-reply-connections): users, entities and definitions. */

export const EVALUATE = "/gms/test?action=evaluate";
export const BATCH = "/gms/test?action=batchEvaluate";
/** VIEW_TESTS only: may evaluate, may not read entities */
export const VIEWER = "urn:li:corpuser:viewer";
/** VIEW_TESTS and GET_ENTITY */
export const READER = "urn:li:corpuser:reader";
/** GET_TASK_STATUS only */
export const TASKS = "urn:li:corpuser:tasks";
/** MANAGE_TESTS (push) without GET_ENTITY */
export const MANAGER = "urn:li:corpuser:manager";

export const LONG = "urn:li:dataset:(urn:li:dataPlatform:hive,db.long,PROD)";
export const TAGGED = "urn:li:dataset:(urn:li:dataPlatform:hive,db.tagged,PROD)";
export const taggedNumber = (i: number) => `urn:li:dataset:(urn:li:dataPlatform:hive,db.tagged${i},PROD)`;
export const DESCRIPTION = `secret-owner-text ${"d".repeat(200 * 1024)}`;
export const TAGS = Array.from({ length: 20 }, (_, i) => ({ tag: `urn:li:tag:${"t".repeat(300)}${i}` }));

export interface FailedRule {
  actual: unknown[];
  actualCount: number;
  message: string;
}
export interface Evaluation {
  failing: Array<{ test: string; failedRules: FailedRule[] }>;
}

/** A definition of `n` rules on `property` that all fail (none of their operands occurs). */
export const failingRules = (n: number, property: string) =>
  JSON.stringify({
    on: { types: ["dataset"] },
    rules: Array.from({ length: n }, (_, i) => ({ property, operator: "contains_str", value: `absent-${i}` })),
  });

export function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
