/** What replicas.e2e.spec.ts works with: its users, documents and the calls it makes to either replica. */
import { eventually } from "@mdp/core/testing";
import { systemClient } from "./services";

export const ROOT = "urn:li:corpuser:admin";
export const ALICE = "urn:li:corpuser:alice";
export const system = systemClient;

export interface GraphQLResult {
  status: number;
  data?: Record<string, unknown>;
  errors?: Array<{ message: string; extensions?: { code?: string } }>;
}

export async function graphql(
  baseUrl: string,
  query: string,
  variables: Record<string, unknown>,
  headers: Record<string, string>,
) {
  const res = await fetch(`${baseUrl}/api/graphql`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify({ query, variables }),
  });
  return { status: res.status, ...((await res.json()) as Omit<GraphQLResult, "status">) };
}

/** Polls until `refused` holds; returns how long that took after `since`. */
export async function msUntil(since: number, refused: () => Promise<boolean>, limitMs = 5_000): Promise<number> {
  await eventually("enforced", refused, { timeoutMs: since + limitMs - Date.now() });
  return Date.now() - since;
}
