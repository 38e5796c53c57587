/** Every row of the authorization matrix, and every operation the gateway serves: each must have one. */
import { servedSchema } from "../../../src/api-docs/graphql-sdl";
import { describeGmsRoutes } from "../../../src/gms.routes";
import type { Row } from "./principals";
import { ACCESS_ROWS } from "./rows-access";
import { HTTP_ROWS } from "./rows-http";
import { WEBHOOK_ROWS } from "./rows-webhooks";
import { WORK_ROWS } from "./rows-work";

export const ROWS: Row[] = [...ACCESS_ROWS, ...WORK_ROWS, ...HTTP_ROWS, ...WEBHOOK_ROWS];

/** Every operation the gateway serves: the schema's query and mutation fields, the /gms routes, the dashboard's API. */
export async function servedOperations(): Promise<string[]> {
  const schema = await servedSchema();
  const fields = ["Query", "Mutation"].flatMap((type) =>
    Object.keys(
      schema.getType(type) ? (schema.getType(type) as unknown as { getFields(): object }).getFields() : {},
    ).map((field) => `${type}.${field}`),
  );
  const routes = describeGmsRoutes().map((r) =>
    r.kind === "action" ? `POST ${r.path}?action=${r.name}` : `${r.kind === "get" ? "GET" : "POST"} ${r.path}`,
  );
  // The session route is DataHub's frontend's, not in the OpenAPI document the routes above are described by.
  return [...fields, ...routes, "GET /admin/queues/api/queues", "POST /auth/generateSessionTokenForUser"].sort();
}
