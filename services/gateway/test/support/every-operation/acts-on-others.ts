/** Every row of the seventh principal, and every operation that takes an object's id: each must have one. */
import { readFileSync } from "node:fs";
import path from "node:path";
import { getNamedType, isInputObjectType } from "graphql";
import { servedSchema } from "../../../src/api-docs/graphql-sdl";
import { describeGmsRoutes } from "../../../src/gms.routes";
import { ADMIN_ROWS } from "./acts-on-others-admin";
import { TEST_ROWS } from "./acts-on-others-tests";
import { TOKEN_ROWS } from "./acts-on-others-tokens";
import type { OthersRow } from "./others-context";

/**
 * The seventh principal: every operation that takes the id of an object (a token, a test, a policy, a task, a
 * subscription, a user's or an entity's urn), called on one another user owns. Each row says what must hold.
 */
export const ACTS_ON_OTHERS: OthersRow[] = [...TOKEN_ROWS, ...TEST_ROWS, ...ADMIN_ROWS];

/** The fields of an HTTP action's documented request body (docs/api/openapi.json, which api-docs tests keep served). */
export function requestFieldsOf(route: string, action: string): string[] {
  const doc = JSON.parse(readFileSync(path.join(__dirname, "../../../../../docs/api/openapi.json"), "utf8")) as {
    paths: Record<string, Record<string, { requestBody?: { content: Record<string, { schema: Schema }> } }>>;
    components: { schemas: Record<string, Schema> };
  };
  type Schema = { $ref?: string; properties?: Record<string, unknown>; oneOf?: Schema[] };
  const resolve = (schema: Schema): Schema =>
    schema.$ref ? resolve(doc.components.schemas[schema.$ref.split("/").at(-1)!]!) : schema;
  const schema = doc.paths[`${route}?action=${action}`]?.post?.requestBody?.content["application/json"]?.schema;
  if (!schema) return [];
  const resolved = resolve(schema);
  return [resolved, ...(resolved.oneOf ?? []).map(resolve)].flatMap((s) => Object.keys(s.properties ?? {}));
}

/** The names an argument or input field takes when it names an object: a token, test, task, user, entity... */
export const OBJECT_ID =
  /^(id|urn|urns|tokenId|taskId|testUrn|testUrns|subscriptionId|actorUrn|groupUrn|entityUrn|ownerUrn)$/;

/**
 * Every mutation and HTTP write action that takes an object's id: a mutation whose arguments, or its input's fields,
 * have an OBJECT_ID name; an HTTP action (not a read: get*, list*) whose documented body has one.
 */
export async function objectIdOperations(): Promise<string[]> {
  const schema = await servedSchema();
  const mutation = schema.getMutationType();
  const names = (field: { args: ReadonlyArray<{ name: string; type: unknown }> }) =>
    field.args.flatMap((arg) => {
      const type = getNamedType(arg.type as never);
      return [arg.name, ...(isInputObjectType(type) ? Object.keys(type.getFields()) : [])];
    });
  const mutations = Object.values(mutation?.getFields() ?? {})
    .filter((field) => names(field).some((n) => OBJECT_ID.test(n)))
    .map((field) => `Mutation.${field.name}`);
  const actions = describeGmsRoutes()
    .filter((r) => r.kind === "action" && !/^(get|list)/.test(r.name))
    .filter((r) => r.kind === "action" && requestFieldsOf(r.path, r.name).some((n) => OBJECT_ID.test(n)))
    .map((r) => (r.kind === "action" ? `POST ${r.path}?action=${r.name}` : ""));
  return [...new Set([...mutations, ...actions])].sort();
}
