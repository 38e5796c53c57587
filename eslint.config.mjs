// One lint setup for the workspace: type-aware rules (floating promises, exhaustive switches), Prettier for format.
import js from "@eslint/js";
import tseslint from "typescript-eslint";
import { importX } from "eslint-plugin-import-x";
import { createTypeScriptImportResolver } from "eslint-import-resolver-typescript";

// The gateway's folders (ARCHITECTURE.md, "The gateway's folders"): each imports only the gateway folders named for it
// here, which are those it imports today, so a new dependency between them is a decision made in this file. A base
// folder imports no feature. A domain folder's services import no transport folder (http/, graphql/): only its
// transport edge, a *.routes.ts or *.graphql.ts, does. The transport folders (http/, graphql/, api-docs/) and the
// composition root (app.ts, composition.ts, gms.routes.ts, main.ts) put the folders together and are not held here.
const GATEWAY = "services/gateway/src";
/** each base folder → the base folders it imports */
const GATEWAY_BASE = {
  auth: [],
  shared: [],
  audit: ["auth", "shared"],
  policies: ["audit", "auth", "events", "shared"],
  events: ["auth", "policies", "shared"],
};
/** each feature → the features it imports (and any base folder) */
const GATEWAY_FEATURES = {
  tokens: ["webhooks"],
  "token-usage": ["tokens"],
  "incident-response": ["tokens", "operations"],
  "service-accounts": ["tokens", "incident-response"],
  retention: ["operations"],
  operations: [],
  "metadata-tests": [],
  metadata: ["metadata-tests"],
  webhooks: [],
  webapp: [],
};
const GATEWAY_FOLDERS = { ...GATEWAY_BASE, ...GATEWAY_FEATURES };
/** the files that put the folders together: no folder imports them */
const COMPOSITION_ROOT = ["app", "composition", "gms\\.routes", "main"];
const TRANSPORT = {
  regex: "^(\\.\\./)+(http|graphql)(/|$)",
  message:
    "only a transport edge (*.routes.ts, *.graphql.ts) imports http/ or graphql/; a service's helpers are in shared/ (ARCHITECTURE.md)",
};
/** The gateway folders `folder` must not import, as a no-restricted-imports pattern. */
function refusedFolders(folder) {
  const isFeature = folder in GATEWAY_FEATURES;
  const allowed = [...GATEWAY_FOLDERS[folder], ...(isFeature ? Object.keys(GATEWAY_BASE) : [])];
  const refused = Object.keys(GATEWAY_FOLDERS).filter((other) => other !== folder && !allowed.includes(other));
  const named = GATEWAY_FOLDERS[folder].join(", ");
  const may = isFeature
    ? `the base folders${named ? ` and the features ${named}` : ""} only`
    : named
      ? `${named} only`
      : "no other gateway folder";
  return {
    regex: `^(\\.\\./)+(${[...refused, ...COMPOSITION_ROOT].join("|")})(/|$)`,
    message: `${folder}/ imports ${may} (ARCHITECTURE.md, "The gateway's folders")`,
  };
}
const restricted = (patterns) => ({ "no-restricted-imports": ["error", { patterns }] });
const gatewayFolderRules = Object.keys(GATEWAY_FOLDERS).flatMap((folder) => [
  { files: [`${GATEWAY}/${folder}/**/*.ts`], rules: restricted([refusedFolders(folder), TRANSPORT]) },
  {
    files: [`${GATEWAY}/${folder}/**/*.routes.ts`, `${GATEWAY}/${folder}/**/*.graphql.ts`],
    rules: restricted([refusedFolders(folder)]),
  },
]);

export default tseslint.config(
  { ignores: ["**/node_modules/**", "**/dist/**", "**/generated/**", ".data/**", "coverage/**", "*.config.js"] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ["**/*.ts"],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      "@typescript-eslint/no-floating-promises": "error",
      "@typescript-eslint/no-misused-promises": ["error", { checksVoidReturn: { arguments: false } }],
      "@typescript-eslint/switch-exhaustiveness-check": "error",
      "@typescript-eslint/await-thenable": "error",
      "@typescript-eslint/no-explicit-any": "error",
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
    },
  },
  {
    files: ["**/*.ts"],
    plugins: { "import-x": importX },
    settings: {
      // the parsers and extensions import-x reads our other files with (without them a cycle goes unseen)
      ...importX.flatConfigs.typescript.settings,
      "import-x/resolver-next": [createTypeScriptImportResolver({ project: "tsconfig.json" })],
    },
    rules: { "import-x/no-cycle": ["error", { ignoreExternal: true }] },
  },
  {
    // Imports go one way (ARCHITECTURE.md): libs never import a service.
    files: ["libs/**/*.ts"],
    rules: {
      "no-restricted-imports": [
        "error",
        {
          patterns: [
            {
              regex: "^(gateway|truncation-worker|evaluation-worker|webhook-worker)(/|$)|/services/",
              message: "libs never import services (ARCHITECTURE.md)",
            },
          ],
        },
      ],
    },
  },
  ...gatewayFolderRules,
  {
    // CommonJS run by node before any TypeScript loads (scripts/register-ts.cjs).
    files: ["**/*.cjs"],
    languageOptions: {
      sourceType: "commonjs",
      globals: { require: "readonly", module: "readonly", process: "readonly", __dirname: "readonly" },
    },
    rules: { "@typescript-eslint/no-require-imports": "off" },
  },
);
