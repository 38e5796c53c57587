/** What DataHub's SDK writes and sign-in tests share (datahub-sdk-writes, datahub-sign-in): client texts, users, answers. */
import { verbatimOperations } from "../fixtures/datahub/operations";

export const APP = verbatimOperations("app-config.graphql");
export const ME = verbatimOperations("me.graphql");
export const USERS = verbatimOperations("users.graphql");
export const ROLES = verbatimOperations("roles.graphql");
export const AUTH = verbatimOperations("auth.graphql");
export const SMOKE_SA = verbatimOperations("smoke-service-accounts.graphql");

export const SYSTEM_ID = "__datahub_system";
export const SYSTEM_SECRET = "development-system-client-secret";
export const ALICE = "urn:li:corpuser:alice";
export const BOB = "urn:li:corpuser:bob";

export interface Answer {
  status: number;
  body: Record<string, unknown> & { message?: string; value?: unknown };
}
