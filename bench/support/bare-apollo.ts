import { ApolloServer, type ApolloServerOptions, type BaseContext } from "@apollo/server";
import { expressMiddleware } from "@as-integrations/express5";
import express, { type Express } from "express";

/**
 * Serves a schema the way the baselines and floors of bench/tokens do: Apollo Server 5 through
 * @as-integrations/express5 behind express 5 and express.json with the gateway's limit, on PORT at 127.0.0.1, with no
 * authentication, logging or metrics (unless `protect` mounts them first: floor-protections.ts). Prints `<label> listening
 * on <port>` when ready; exits on SIGTERM.
 */
export async function serveBareApollo(
  label: string,
  options: ApolloServerOptions<BaseContext>,
  protect?: (app: Express) => void,
): Promise<void> {
  const server = new ApolloServer({ ...options, stopOnTerminationSignals: false });
  await server.start();
  const app = express();
  protect?.(app);
  app.use(express.json({ limit: "1mb" }));
  app.use("/api/graphql", expressMiddleware(server));
  const port = Number(process.env.PORT);
  app.listen(port, "127.0.0.1", () => process.stdout.write(`${label} listening on ${port}\n`));
  process.on("SIGTERM", () => process.exit(0));
}
