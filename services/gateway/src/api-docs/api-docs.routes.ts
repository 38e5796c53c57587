import { ApolloServerPluginLandingPageLocalDefault } from "@apollo/server/plugin/landingPage/default";
import express, { type Express, type RequestHandler } from "express";
import helmet from "helmet";
import { dirname } from "node:path";
import type { OpenApiDocument } from "./openapi";

/** The OpenAPI viewer (Swagger UI); the document is also served beside it, for the viewer to read. */
export const API_DOCS_PATH = "/api-docs";
/** Where the OpenAPI document is served besides the viewer's directory: the root and each gms base. */
export const openApiPaths = (gmsBases: readonly string[]) => [
  "/openapi.json",
  ...gmsBases.map((b) => `${b}/openapi.json`),
];

/** What the viewer's page loads from swagger-ui-dist: nothing else of the package is served. */
const SWAGGER_UI_FILES = new Set([
  "/index.html",
  "/index.css",
  "/swagger-ui.css",
  "/swagger-ui-bundle.js",
  "/swagger-ui-standalone-preset.js",
  "/favicon-32x32.png",
  "/favicon-16x16.png",
]);

/**
 * The package's own initializer points at the petstore; this one reads the document beside the page. A file, not an
 * inline script: the page runs under the gateway's Content-Security-Policy unchanged (`script-src 'self'`; Swagger
 * UI 5 needs nothing beyond `'self'`, `data:` images and inline styles, which it allows). No validator badge: it
 * would send the document to validator.swagger.io.
 */
const SWAGGER_INITIALIZER = `window.onload = function () {
  window.ui = SwaggerUIBundle({
    url: "openapi.json",
    dom_id: "#swagger-ui",
    deepLinking: true,
    validatorUrl: null,
    presets: [SwaggerUIBundle.presets.apis, SwaggerUIStandalonePreset],
    plugins: [SwaggerUIBundle.plugins.DownloadUrl],
    layout: "StandaloneLayout",
  });
};
`;

/**
 * GET routes of the OpenAPI document and its viewer. Mounted after authentication: the document and the page need
 * credentials like every route (a browser gets a Basic prompt, see browser-auth.ts).
 */
export function addOpenApiRoutes(app: Express, gmsBases: readonly string[], document: () => OpenApiDocument): void {
  let json: string | undefined; // the routes do not change once the gateway is built
  const serveDocument: RequestHandler = (_req, res) => {
    json ??= JSON.stringify(document());
    res.type("json").send(json);
  };
  app.get([...openApiPaths(gmsBases), `${API_DOCS_PATH}/openapi.json`], serveDocument);
  // The page's assets are relative (./swagger-ui.css): it must be read as a directory.
  app.get(API_DOCS_PATH, (req, res, next) => {
    if (req.originalUrl === API_DOCS_PATH) res.redirect(301, `${API_DOCS_PATH}/`);
    else next();
  });
  app.get(`${API_DOCS_PATH}/swagger-initializer.js`, (_req, res) => {
    res.type("js").send(SWAGGER_INITIALIZER);
  });
  const files = express.static(dirname(require.resolve("swagger-ui-dist/package.json")), { fallthrough: false });
  app.use(API_DOCS_PATH, (req, res, next) => {
    if (req.method !== "GET" && req.method !== "HEAD") return next();
    if (req.path === "/") req.url = "/index.html";
    if (!SWAGGER_UI_FILES.has(req.path)) return next();
    files(req, res, next);
  });
}

/**
 * Apollo's embedded Sandbox, on a GET of the GraphQL path by a browser (a request preferring HTML): the page's
 * requests then go to the same URL, over POST, with the credentials the browser was asked for. Rendered here, not by
 * Apollo: a GET never reaches Apollo, which would run a query sent in the URL (GraphQL stays POST only). The page
 * loads the Sandbox from Apollo's CDN into an iframe, so it alone gets a wider Content-Security-Policy: Apollo's
 * script and frame origins, and only this render's nonce for inline script and style. No telemetry is sent to Apollo.
 */
export async function graphqlExplorer(): Promise<RequestHandler> {
  const plugin = ApolloServerPluginLandingPageLocalDefault({
    embed: { runTelemetry: false, endpointIsEditable: false, initialState: { pollForSchemaUpdates: false } },
    // The Sandbox's requests carry the browser's credentials for this origin (the Basic login it was asked for).
    includeCookies: true,
    footer: false,
  });
  // The plugin's hooks ignore their argument (the server's context), which this page does not have.
  const listener = await plugin.serverWillStart?.(undefined as never);
  const landingPage = await listener?.renderLandingPage?.();
  if (!landingPage) throw new Error("Apollo's landing page plugin rendered no page");
  const render = landingPage.html;
  const nonceOf = (html: string) => /nonce="([0-9a-f]+)"/.exec(html)?.[1];
  if (!nonceOf(typeof render === "string" ? render : await render())) {
    throw new Error("Apollo's landing page has no nonce: its Content-Security-Policy cannot be written");
  }
  return async (req, res, next) => {
    if (req.accepts(["application/json", "application/graphql-response+json", "text/html"]) !== "text/html") {
      return next();
    }
    const html = typeof render === "string" ? render : await render();
    const nonce = nonceOf(html)!;
    const csp = helmet.contentSecurityPolicy({
      directives: {
        "default-src": ["'self'"],
        "script-src": ["'self'", `'nonce-${nonce}'`, "https://embeddable-sandbox.cdn.apollographql.com"],
        "style-src": [
          "'self'",
          `'nonce-${nonce}'`,
          "https://embeddable-sandbox.cdn.apollographql.com",
          "https://fonts.googleapis.com",
        ],
        "font-src": ["'self'", "https://fonts.gstatic.com"],
        "img-src": ["'self'", "data:", "https://apollo-server-landing-page.cdn.apollographql.com"],
        "manifest-src": ["https://apollo-server-landing-page.cdn.apollographql.com"],
        "frame-src": ["https://sandbox.embed.apollographql.com"],
        "frame-ancestors": ["'none'"],
        "upgrade-insecure-requests": null,
      },
    });
    csp(req, res, () => {
      res.setHeader("cache-control", "no-store");
      res.type("html").send(html);
    });
  };
}
