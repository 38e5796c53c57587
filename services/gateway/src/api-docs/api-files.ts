import { GMS_PATHS } from "../app";
import { describeGmsRoutes } from "../gms.routes";
import { printSdl, servedSchema } from "./graphql-sdl";
import { openApiDocument } from "./openapi";

/** The checked-in descriptions of the API, relative to the repository root, and the command that rewrites them. */
export const OPENAPI_FILE = "docs/api/openapi.json";
export const GRAPHQL_SDL_FILE = "docs/api/schema.graphql";
export const WRITE_COMMAND = "pnpm api:write";

/** The OpenAPI document's text as it is checked in: what the gateway serves, pretty-printed. */
export function openApiText(): string {
  return `${JSON.stringify(openApiDocument(describeGmsRoutes(), GMS_PATHS), null, 2)}\n`;
}

/** Each checked-in file and the text it should hold. */
export async function apiFiles(): Promise<Record<string, string>> {
  return { [OPENAPI_FILE]: openApiText(), [GRAPHQL_SDL_FILE]: printSdl(await servedSchema()) };
}
