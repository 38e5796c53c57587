/** What the rate limit tests share (rate-limits*.int.spec.ts): users, documents and the calls they make. */
import { CREATE_TOKEN, type Harness } from "./gateway-harness";

export const ALICE = "urn:li:corpuser:alice";
export const LIMITS = {
  RATE_LIMIT_TOKEN_MINTS_PER_MINUTE: "3",
  RATE_LIMIT_EVALUATIONS_PER_MINUTE: "5",
  RATE_LIMIT_TEST_RUNS_PER_MINUTE: "1",
};

export async function post(h: Harness, path: string, body: unknown, headers: Record<string, string>) {
  const res = await fetch(`${h.baseUrl}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
  });
  return {
    status: res.status,
    retryAfter: res.headers.get("retry-after"),
    body: (await res.json()) as {
      status?: number;
      code?: string;
      message?: string;
      errors?: Array<{ message: string; extensions?: { code?: string } }>;
      data?: Record<string, unknown> | null;
    },
  };
}

export const dataset = (name: string) => `urn:li:dataset:(urn:li:dataPlatform:hive,${name},PROD)`;

export const mint = (h: Harness, headers: Record<string, string>) =>
  post(
    h,
    "/api/graphql",
    {
      query: CREATE_TOKEN,
      variables: { input: { type: "PERSONAL", actorUrn: ALICE, duration: "ONE_HOUR", name: "rate" } },
    },
    headers,
  );
