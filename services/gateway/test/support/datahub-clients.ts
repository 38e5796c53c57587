/** What the DataHub client tests share (datahub-*.int.spec.ts): the client texts they send, their users and answers. */
import { printedOperations, verbatimOperations } from "../fixtures/datahub/operations";

export const WEB = printedOperations("auth.graphql");
export const GC = printedOperations("datahub-gc.graphql");

export const SMOKE = verbatimOperations("smoke-tokens.graphql");
export const SMOKE_SA = verbatimOperations("smoke-service-accounts.graphql");
export const GUIDE_SA = verbatimOperations("service-accounts-guide.graphql");

export const ALICE = "urn:li:corpuser:alice";
export const BOB = "urn:li:corpuser:bob";
export const SYSTEM_ID = "__datahub_system";
export const SYSTEM_SECRET = "development-system-client-secret";

export interface TokenRow {
  id: string;
  type: string;
  name: string;
  ownerUrn: string;
  expiresAt: number | null;
}
export interface TokenList {
  total: number;
  tokens: TokenRow[];
}
/** What the SDK reads of an answer: an operation's `value`, an HTTP error's `message`, GraphQL's `data`. */
export interface SdkAnswer {
  value?: unknown;
  message?: string;
  data?: { listAccessTokens: TokenList } | null;
  errors?: unknown[];
}
