import { Router, type RequestHandler } from "express";
import { dirname, join } from "node:path";

/**
 * The GraphQL explorer: GraphiQL, on a browser's GET of the GraphQL path, with every file it loads served by the
 * gateway from npm packages, so it works where the network has no way out (Apollo's Sandbox, which this replaces,
 * loads its script, fonts and manifest from Apollo's hosts). graphiql 4 is the last major version with a prebuilt
 * browser bundle (a UMD script and its CSS, its fonts inlined as data: URLs); it takes React and ReactDOM as page globals,
 * which react 18 is the last to ship as UMD scripts. Nothing is inline: the page runs under the gateway's
 * Content-Security-Policy unchanged (`script-src 'self'`).
 */

/** Where the explorer's files are served: one path whichever GraphQL path the page was opened at. */
export const GRAPHQL_EXPLORER_ASSETS_PATH = "/graphql-explorer";

/** file served → the installed file it is */
const PACKAGE_FILES: ReadonlyMap<string, string> = new Map([
  ["/react.production.min.js", join(dirname(require.resolve("react/package.json")), "umd/react.production.min.js")],
  [
    "/react-dom.production.min.js",
    join(dirname(require.resolve("react-dom/package.json")), "umd/react-dom.production.min.js"),
  ],
  ["/graphiql.min.js", join(dirname(require.resolve("graphiql/package.json")), "graphiql.min.js")],
  ["/graphiql.min.css", join(dirname(require.resolve("graphiql/package.json")), "graphiql.min.css")],
]);

/** The example the editor opens with: who the page is logged in as. */
const DEFAULT_QUERY = "# The token you logged in with acts as this user.\n{\n  me {\n    urn\n    privileges\n  }\n}\n";

/**
 * Renders GraphiQL; its requests go to the GraphQL path the page was opened at, over POST, with the credentials the
 * browser was asked for (a same-origin fetch carries them). Headers typed in the editor are not kept in the browser's
 * storage: they may hold a token.
 */
const EXPLORER_SCRIPT = `(function () {
  var fetcher = GraphiQL.createFetcher({ url: window.location.pathname });
  ReactDOM.createRoot(document.getElementById("graphiql")).render(
    React.createElement(GraphiQL, {
      fetcher: fetcher,
      defaultQuery: ${JSON.stringify(DEFAULT_QUERY)},
      shouldPersistHeaders: false,
    }),
  );
})();
`;

const EXPLORER_CSS = `html, body { height: 100%; margin: 0; }
#graphiql { height: 100vh; }
`;

const A = GRAPHQL_EXPLORER_ASSETS_PATH;
const PAGE = `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <meta name="robots" content="noindex" />
    <title>GraphQL explorer</title>
    <link rel="stylesheet" href="${A}/graphiql.min.css" />
    <link rel="stylesheet" href="${A}/explorer.css" />
  </head>
  <body>
    <div id="graphiql">Loading…</div>
    <script src="${A}/react.production.min.js"></script>
    <script src="${A}/react-dom.production.min.js"></script>
    <script src="${A}/graphiql.min.js"></script>
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

/** The page's files, under GRAPHQL_EXPLORER_ASSETS_PATH: nothing else of the packages is served. */
export function graphqlExplorerAssets(): Router {
  const router = Router();
  router.get("/explorer.js", (_req, res) => {
    res.type("js").send(EXPLORER_SCRIPT);
  });
  router.get("/explorer.css", (_req, res) => {
    res.type("css").send(EXPLORER_CSS);
  });
  for (const [path, file] of PACKAGE_FILES) {
    router.get(path, (_req, res, next) => {
      // pnpm installs packages under node_modules/.pnpm/, a directory send would refuse as a dotfile
      res.sendFile(file, { dotfiles: "allow" }, (error) => {
        if (error) next(error);
      });
    });
  }
  return router;
}
