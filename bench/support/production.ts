import { randomBytes } from "node:crypto";
import { systemClient } from "../../test/support/services";

/**
 * Benchmarks run the services as operators do, with NODE_ENV=production. That also switches off libraries' development
 * checks: graphql-js, for one, looks for a second copy of itself after every failed instanceof, which was a quarter of
 * the work of completing a page of 100 tokens. Production refuses the development secrets, so each run makes its own.
 */
export function productionSetup(): {
  env: Record<string, string>;
  secrets: { TOKEN_SIGNING_KEY: string; TOKEN_SALT: string; SYSTEM_CLIENT_ID: string; SYSTEM_CLIENT_SECRET: string };
  /** headers of the system client acting for `actorUrn` (root by default) */
  systemClient: (actorUrn?: string) => Record<string, string>;
} {
  const secret = () => randomBytes(32).toString("base64url");
  const secrets = {
    TOKEN_SIGNING_KEY: secret(),
    TOKEN_SALT: secret(),
    SYSTEM_CLIENT_ID: "__datahub_system",
    SYSTEM_CLIENT_SECRET: secret(),
  };
  return {
    env: { NODE_ENV: "production", ...secrets },
    secrets,
    systemClient: (actorUrn) => systemClient(actorUrn, secrets),
  };
}
