import express, { type Express, type RequestHandler } from "express";
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
