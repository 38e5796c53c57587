/** GET /metrics: open to a Prometheus scraper without credentials, as the contract says; routes as labels, not paths. */
import { ROOT, startGateway, systemClientHeaders, type Harness } from "./support/gateway-harness";

describe("GET /metrics", () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startGateway();
  });
  afterAll(() => h.close());

  it("answers without credentials, with node's metrics and each request's duration by matched route and action", async () => {
    await h.graphql("{ me { urn } }", {}, systemClientHeaders(ROOT));
    await fetch(`${h.baseUrl}/gms/operations?action=getIndexSizes`, {
      method: "POST",
      headers: systemClientHeaders(ROOT),
    });
    await fetch(`${h.baseUrl}/gms/entities/${encodeURIComponent("urn:li:dataset:nowhere")}`, {
      headers: systemClientHeaders(ROOT),
    });
    await fetch(`${h.baseUrl}/gms/test?action=evaluate`, { method: "POST" }); // no credentials: 401

    const res = await fetch(`${h.baseUrl}/metrics`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("text/plain");
    const text = await res.text();
    expect(text).toContain("process_cpu_user_seconds_total");
    for (const series of [
      // the action: GraphQL's operation type, a ?action= route's own action, `unknown` for one no route dispatched
      'method="POST",route="/api/graphql",action="query",status="200"',
      'method="POST",route="/gms/operations",action="getIndexSizes",status="200"',
      'method="GET",route="/gms/entities/:urn",action="none",status="404"',
      'method="POST",route="unmatched",action="unknown",status="401"',
    ]) {
      expect(text).toMatch(new RegExp(`^http_request_duration_seconds_count\\{${series}\\} 1$`, "m"));
    }
    expect(text).not.toContain("nowhere"); // a path's values never become labels
  });
});
