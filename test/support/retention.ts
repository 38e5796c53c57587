/** What the retention e2e tests share (test/e2e/retention-*.e2e.spec.ts): the answers they read and the CLI they run. */
import path from "node:path";
import { systemClient } from "./services";

export const ROOT = "urn:li:corpuser:admin";
export const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";
export const headers = systemClient(ROOT);

export interface GraphQLAnswer {
  data?: Record<string, unknown> | null;
  errors?: Array<{ message: string; extensions?: { code?: string } }>;
}
export interface Policy {
  urn: string;
  entityType: string;
  aspect: string;
  retainDays: number;
  cron: string;
  nextRunTime: number | null;
  lastTaskId: string | null;
  lastTaskState: string | null;
  createdBy: string;
  ownerUrn: string;
  suspendedAt: number | null;
}
export interface TaskStatus {
  taskId: string;
  type: string;
  state: string;
  request: { endTimeMillis: number; retentionPolicy?: string };
  result: { deleted: number } | null;
  attemptsMade: number;
  createdBy: string;
  startedAt: number | null;
  finishedAt: number | null;
}

export const MDP = path.resolve(__dirname, "..", "..", "cli", "bin", "mdp.cjs");

export const POLICY_FIELDS =
  "urn entityType aspect retainDays cron nextRunTime lastTaskId lastTaskState createdBy ownerUrn suspendedAt";
