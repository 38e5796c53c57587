import { buildClientSchema, getIntrospectionQuery, printSchema, type IntrospectionQuery } from "graphql";

/** The gateway's schema as SDL, from its own introspection for a floor to serve (token-floor-server.ts). */
export async function gatewaySchema(url: string, headers: Record<string, string>): Promise<string> {
  const res = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify({ query: getIntrospectionQuery() }),
  });
  const body = (await res.json()) as { data?: IntrospectionQuery; errors?: unknown };
  if (!body.data) throw new Error(`introspection of the gateway failed: ${JSON.stringify(body.errors)}`);
  return printSchema(buildClientSchema(body.data));
}
