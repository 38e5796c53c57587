/**
 * What every answer carries and what every request costs the metrics: security headers (helmet) on every route, the
 * queue dashboard included and still working under its Content-Security-Policy, no X-Powered-By anywhere, and route
 * labels a client cannot multiply.
 */
import { get } from "node:http";
import { createToken, ROOT, startGateway, systemClientHeaders, type Harness } from "./support/gateway-harness";

describe("headers and metrics", () => {
  let h: Harness;
  let token: string;
  beforeAll(async () => {
    h = await startGateway();
    token = (await createToken(h, ROOT)).token;
  });
  afterAll(() => h.close());

  const expectSecurityHeaders = (res: Response, what: string) => {
    const headers = Object.fromEntries(res.headers.entries());
    expect({ what, poweredBy: headers["x-powered-by"] }).toEqual({ what, poweredBy: undefined });
    expect({ what, headers }).toMatchObject({
      what,
      headers: {
        "x-frame-options": "DENY",
        "x-content-type-options": "nosniff",
        "content-security-policy": expect.stringContaining("frame-ancestors 'none'"),
      },
    });
  };

  it("keeps an idle connection open past a load balancer's idle timeout (HTTP_KEEP_ALIVE_TIMEOUT_MS, 65 s)", async () => {
    // Node's own 5 s would close connections a balancer (60 s idle) is about to reuse: a reset, a 502 to its client.
    const keepAlive = await new Promise<string | undefined>((resolve, reject) =>
      get(`${h.baseUrl}/health`, (res) => {
        res.resume();
        resolve(res.headers["keep-alive"]?.toString());
      }).on("error", reject),
    );
    expect(keepAlive).toBe("timeout=65");
  });

  it("every route: API, GraphQL, health, errors, the dashboard's page, its assets and its API", async () => {
    const auth = systemClientHeaders(ROOT);
    const dashboard = { authorization: `Bearer ${token}` };
    const page = await fetch(`${h.baseUrl}/admin/queues`, { headers: dashboard });
    expect(page.status).toBe(200);
    const html = await page.text();
    expectSecurityHeaders(page, "dashboard page");
    const csp = page.headers.get("content-security-policy")!;
    expect(csp).not.toContain("upgrade-insecure-requests");

    // Everything the page loads is allowed by its policy and answers: scripts, styles and fonts from 'self' only
    const assets = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]!);
    expect(assets.filter((a) => /^(https?:)?\/\//.test(a))).toEqual([]);
    expect(assets.filter((a) => a.endsWith(".js")).length).toBeGreaterThan(0);
    for (const asset of assets) {
      const res = await fetch(new URL(asset, `${h.baseUrl}/admin/queues/`), { headers: dashboard });
      expect({ asset, status: res.status }).toEqual({ asset, status: 200 });
      expectSecurityHeaders(res, asset);
      await res.arrayBuffer();
    }
    expect(csp).not.toMatch(/https?:/); // no other origin for anything
    expect(csp).toMatch(/script-src 'self'(;|$)/); // no inline script runs: the page has none but its JSON config
    expect(html).not.toMatch(/<script(?![^>]*(src=|type="application\/json"))/);

    const api = await fetch(`${h.baseUrl}/admin/queues/api/queues`, { headers: dashboard });
    expect(api.status).toBe(200);
    expectSecurityHeaders(api, "dashboard API");

    for (const [what, res] of [
      [
        "HTTP operation",
        await fetch(`${h.baseUrl}/gms/operations?action=getIndexSizes`, { method: "POST", headers: auth }),
      ],
      [
        "GraphQL",
        await fetch(`${h.baseUrl}/api/graphql`, {
          method: "POST",
          headers: { ...auth, "content-type": "application/json" },
          body: '{"query":"{ me { urn } }"}',
        }),
      ],
      ["health", await fetch(`${h.baseUrl}/health`)],
      ["401", await fetch(`${h.baseUrl}/gms/operations?action=getIndexSizes`, { method: "POST" })],
      ["404", await fetch(`${h.baseUrl}/nowhere`, { headers: auth })],
    ] as const) {
      expectSecurityHeaders(res, what);
      await res.arrayBuffer();
    }
  });

  it("a route's label is its pattern, whatever the letter case or slashes of the path; unmatched paths share one", async () => {
    const auth = systemClientHeaders(ROOT);
    const spellings = [
      "/gms/operations",
      "/GMS/operations",
      "/gMs/OPERATIONS",
      "/Api/Gms/Operations/",
      "//gms//operations",
    ];
    for (const path of spellings) {
      const res = await fetch(`${h.baseUrl}${path}?action=getIndexSizes`, { method: "POST", headers: auth });
      await res.arrayBuffer();
    }
    for (let i = 0; i < 50; i++) {
      await (await fetch(`${h.baseUrl}/no/such/path/${i}/${"AbC".repeat(i % 5)}`, { headers: auth })).arrayBuffer();
    }
    await (
      await fetch(`${h.baseUrl}/GMS/ENTITIES/${encodeURIComponent("urn:li:dataset:Nowhere")}`, { headers: auth })
    ).arrayBuffer();
    const text = await (await fetch(`${h.baseUrl}/metrics`)).text();
    const routes = new Set(
      [...text.matchAll(/^http_request_duration_seconds_count\{[^}]*route="([^"]*)"/gm)].map((m) => m[1]),
    );
    expect([...routes].filter((r) => /operations/i.test(r!)).sort()).toEqual([
      "/api/gms/operations",
      "/gms/operations",
    ]);
    expect(routes).toContain("/gms/entities/:urn");
    expect([...routes].some((r) => /no\/such|nowhere|ENTITIES|GMS/.test(r!))).toBe(false);
    expect(routes).toContain("unmatched");
  });
});
