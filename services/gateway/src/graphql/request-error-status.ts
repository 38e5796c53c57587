import type { GraphQLRequest, GraphQLResponse } from "@apollo/server";

const GRAPHQL_RESPONSE_JSON = "application/graphql-response+json";

/** How an Accept header rates a media type: its q and how specifically it names it (2 exactly, 1 by type/*, 0 *\/*). */
function rating(accept: string, mediaType: string): [number, number] {
  const [type] = mediaType.split("/");
  let best: [number, number] = [0, -1];
  for (const entry of accept.split(",")) {
    const [range = "", ...params] = entry.split(";").map((part) => part.trim().toLowerCase());
    const specificity = range === mediaType ? 2 : range === `${type}/*` ? 1 : range === "*/*" ? 0 : -1;
    if (specificity < 0 || specificity < best[1]) continue;
    const q = params.find((p) => p.startsWith("q="));
    best = [q ? Number(q.slice(2)) || 0 : 1, specificity];
  }
  return best;
}

/**
 * Whether Apollo answers this Accept header with application/graphql-response+json rather than application/json: the
 * first wins on a higher q, or the same q named more specifically; otherwise (ties included) application/json, as
 * Apollo's negotiation lists it first.
 */
export function prefersGraphQLResponseJson(accept: string | undefined): boolean {
  if (!accept) return false;
  const [gq, gs] = rating(accept, GRAPHQL_RESPONSE_JSON);
  const [jq, js] = rating(accept, "application/json");
  return gq > 0 && (gq > jq || (gq === jq && gs > js));
}

/**
 * A request GraphQL refuses before executing it (a syntax or validation error, a variable of the wrong type) answers
 * HTTP 200 with `errors[]` when the response is application/json, as the GraphQL over HTTP spec has it for that type
 * and as DataHub's clients expect: its Python SDK raises a transport error on any 4xx, and never reads the errors.
 * A client that asks for application/graphql-response+json keeps Apollo's 400. Other statuses (429, 503 with
 * Retry-After: retry-status.ts) are left as they are.
 */
export function setRequestErrorStatus(request: GraphQLRequest, response: GraphQLResponse): void {
  if (response.http.status !== 400 || response.body.kind !== "single") return;
  // The Accept header is read only for a 400: most answers are not one.
  if (!prefersGraphQLResponseJson(request.http?.headers.get("accept"))) response.http.status = 200;
}
