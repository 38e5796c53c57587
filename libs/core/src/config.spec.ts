import { ConfigError, DEVELOPMENT_SECRETS, loadConfig } from "./config";

const base = { DATABASE_URL: "postgresql://localhost/x", REDIS_URL: "redis://localhost:6379" };

describe("loadConfig", () => {
  it("applies the defaults README.md's configuration table documents", () => {
    const config = loadConfig(base);
    expect(config).toMatchObject({
      PORT: 8080,
      HOST: "127.0.0.1",
      AUTH_ENABLED: true,
      ROOT_USER_URN: "urn:li:corpuser:admin",
      URN_NAMESPACE: "li",
      ACCESS_TOKEN_ALLOW_NO_EXPIRY: false,
      EVALUATE_TIMEOUT_MS: 30000,
    });
    expect(config.ACCESS_TOKEN_ALLOWED_DURATIONS.map((d) => d.iso).join(",")).toBe(
      "PT1H,P1D,P7D,P30D,P90D,P180D,P365D",
    );
  });

  it("refuses ACCESS_TOKEN_ALLOWED_DURATIONS that are not ISO-8601 durations, naming them", () => {
    expect(() => loadConfig({ ...base, ACCESS_TOKEN_ALLOWED_DURATIONS: "P30D,30d" })).toThrow(/30D: not ISO-8601/);
  });

  it("names a missing required variable", () => {
    expect(() => loadConfig({ REDIS_URL: base.REDIS_URL })).toThrow("DATABASE_URL is required");
  });

  it.each([
    ["PORT", "eighty", "PORT must be a whole number"],
    ["PORT", "70000", "PORT must be at most 65535"],
    ["AUTH_ENABLED", "yes", "AUTH_ENABLED must be 'true' or 'false'"],
    [
      "REDIS_URL",
      "localhost:6379",
      "REDIS_URL must be a URL starting with redis://, rediss://, redis-cluster:// or rediss-cluster://",
    ],
    ["REDIS_URL", "redis-cluster://h1:7000,h2", "REDIS_URL must list the cluster's nodes as host:port"],
    ["LOG_LEVEL", "loud", "LOG_LEVEL"],
    ["EVALUATION_CONCURRENCY", "0", "EVALUATION_CONCURRENCY must be at least 1"],
    ["TOKEN_SIGNING_KEY", "short", "TOKEN_SIGNING_KEY must be at least 32 characters"],
  ])("refuses %s=%s naming the variable", (name, value, message) => {
    expect(() => loadConfig({ ...base, [name]: value })).toThrow(message);
  });

  it("takes a Redis Cluster only with a hash-tagged QUEUE_PREFIX, so each queue's keys share one slot", () => {
    const cluster = { ...base, REDIS_URL: "redis-cluster://10.0.0.1:7000,10.0.0.2:7000" };
    expect(() => loadConfig(cluster)).toThrow("QUEUE_PREFIX must hold a {hash tag} on Redis Cluster, e.g. {mdp}");
    expect(loadConfig({ ...cluster, QUEUE_PREFIX: "{mdp}" }).QUEUE_PREFIX).toBe("{mdp}");
  });

  it("treats an empty variable as unset", () => {
    expect(loadConfig({ ...base, PORT: "" }).PORT).toBe(8080);
  });

  describe("in production", () => {
    const secrets = {
      TOKEN_SIGNING_KEY: "k".repeat(40),
      TOKEN_SALT: "s".repeat(20),
      SYSTEM_CLIENT_SECRET: "c".repeat(20),
    };

    it("accepts secrets of its own", () => {
      expect(loadConfig({ ...base, ...secrets, NODE_ENV: "production" }).NODE_ENV).toBe("production");
    });

    it("turns the GraphQL explorer off unless GRAPHQL_EXPLORER=true, and it is on elsewhere by default", () => {
      expect(loadConfig({ ...base, ...secrets, NODE_ENV: "production" }).GRAPHQL_EXPLORER).toBe(false);
      expect(
        loadConfig({ ...base, ...secrets, NODE_ENV: "production", GRAPHQL_EXPLORER: "true" }).GRAPHQL_EXPLORER,
      ).toBe(true);
      expect(loadConfig(base).GRAPHQL_EXPLORER).toBe(true);
      expect(loadConfig({ ...base, GRAPHQL_EXPLORER: "false" }).GRAPHQL_EXPLORER).toBe(false);
    });

    it("refuses the development secrets, naming each", () => {
      const attempt = () => loadConfig({ ...base, NODE_ENV: "production" });
      expect(attempt).toThrow(ConfigError);
      expect(attempt).toThrow("TOKEN_SIGNING_KEY must be set to a secret of your own");
      expect(attempt).toThrow("TOKEN_SALT must be set");
      expect(attempt).toThrow("SYSTEM_CLIENT_SECRET must be set");
    });

    it("refuses a development secret given explicitly", () => {
      const env = { ...base, ...secrets, NODE_ENV: "production", TOKEN_SALT: DEVELOPMENT_SECRETS.TOKEN_SALT };
      expect(() => loadConfig(env)).toThrow("TOKEN_SALT must be set to a secret of your own");
    });

    it("refuses AUTH_ENABLED=false", () => {
      expect(() => loadConfig({ ...base, ...secrets, NODE_ENV: "production", AUTH_ENABLED: "false" })).toThrow(
        "AUTH_ENABLED=false is not allowed when NODE_ENV=production",
      );
    });
  });
});
