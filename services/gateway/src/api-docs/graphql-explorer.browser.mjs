// The GraphQL explorer's page script, bundled with GraphiQL and React by graphql-explorer-bundle.ts (esbuild): the
// browser loads it as one file of the gateway's. It runs in the browser, not in Node.
/* global window, document, fetch */
import { createElement } from "react";
import { createRoot } from "react-dom/client";
import { GraphiQL } from "graphiql";
import "graphiql/style.css";
import "./graphql-explorer.browser.css";

/** The example the editor opens with: who the page is logged in as. */
const DEFAULT_QUERY = "# The token you logged in with acts as this user.\n{\n  me {\n    urn\n    privileges\n  }\n}\n";

/**
 * GraphiQL's requests go to the GraphQL path the page was opened at, over POST, with the credentials the browser was
 * asked for (a same-origin fetch carries them) and the headers typed in the editor.
 */
async function fetcher(params, options) {
  const response = await fetch(window.location.pathname, {
    method: "POST",
    headers: { "content-type": "application/json", ...options?.headers },
    body: JSON.stringify(params),
  });
  return response.json();
}

// Headers typed in the editor are not kept in the browser's storage: they may hold a token.
createRoot(document.getElementById("graphiql")).render(
  createElement(GraphiQL, { fetcher, defaultQuery: DEFAULT_QUERY, shouldPersistHeaders: false }),
);
