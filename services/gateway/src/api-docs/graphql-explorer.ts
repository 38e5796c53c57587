import { Router, type RequestHandler } from "express";
import { EXPLORER_FILES, explorerFiles } from "./graphql-explorer-bundle";

/**
 * The GraphQL explorer: GraphiQL, on a browser's GET of the GraphQL path, with every file it loads served by the
 * gateway, so it works where the network has no way out (Apollo's Sandbox, which this replaces, loads its script,
 * fonts and manifest from Apollo's hosts). GraphiQL, React and the page's script are one script and one stylesheet
 * bundled from npm packages (graphql-explorer-bundle.ts; GraphiQL's fonts are data: URLs in its stylesheet). Nothing
 * is inline: the page runs under the gateway's Content-Security-Policy unchanged (`script-src 'self'`).
 */

/** Where the explorer's files are served: one path whichever GraphQL path the page was opened at. */
export const GRAPHQL_EXPLORER_ASSETS_PATH = "/graphql-explorer";

const A = GRAPHQL_EXPLORER_ASSETS_PATH;
const PAGE = `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <meta name="robots" content="noindex" />
    <title>GraphQL explorer</title>
    <link rel="stylesheet" href="${A}/explorer.css" />
  </head>
  <body>
    <div id="graphiql">Loading…</div>
    <script src="${A}/explorer.js"></script>
  </body>
</html>
`;

/**
 * The page, on a GET of the GraphQL path by a browser (a request preferring HTML). Rendered here, not by Apollo: a GET
 * never reaches Apollo, which would run a query sent in the URL (GraphQL stays POST only).
 */
export function graphqlExplorerPage(): RequestHandler {
  return (req, res, next) => {
    if (req.accepts(["application/json", "application/graphql-response+json", "text/html"]) !== "text/html") {
      return next();
    }
    res.setHeader("cache-control", "no-store");
    res.type("html").send(PAGE);
  };
}

/** The page's files, under GRAPHQL_EXPLORER_ASSETS_PATH: the bundle's two, nothing else. */
export function graphqlExplorerAssets(): Router {
  const router = Router();
  for (const name of EXPLORER_FILES) {
    router.get(`/${name}`, (_req, res, next) => {
      explorerFiles().then((files) => res.type(name.endsWith(".js") ? "js" : "css").send(files.get(name)), next);
    });
  }
  return router;
}
