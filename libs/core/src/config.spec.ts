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

  it("defaults ACCESS_TOKEN_FAMILY_MAX_DAYS to the longest allowed token lifetime, rounded up to whole days", () => {
    expect(loadConfig(base).ACCESS_TOKEN_FAMILY_MAX_DAYS).toBe(365);
    expect(loadConfig({ ...base, ACCESS_TOKEN_ALLOWED_DURATIONS: "PT1H,P30D" }).ACCESS_TOKEN_FAMILY_MAX_DAYS).toBe(30);
    expect(loadConfig({ ...base, ACCESS_TOKEN_ALLOWED_DURATIONS: "PT1H,P1DT1H" }).ACCESS_TOKEN_FAMILY_MAX_DAYS).toBe(2);
    expect(loadConfig({ ...base, ACCESS_TOKEN_ALLOWED_DURATIONS: "PT1H" }).ACCESS_TOKEN_FAMILY_MAX_DAYS).toBe(1);
    expect(loadConfig({ ...base, ACCESS_TOKEN_FAMILY_MAX_DAYS: "7" }).ACCESS_TOKEN_FAMILY_MAX_DAYS).toBe(7);
    expect(loadConfig({ ...base, ACCESS_TOKEN_FAMILY_MAX_DAYS: "" }).ACCESS_TOKEN_FAMILY_MAX_DAYS).toBe(365);
  });

  it("reads WEBHOOK_RETRY_SCHEDULE as the delay before each attempt, Svix's by default, and refuses a bad one", () => {
    expect(loadConfig(base).WEBHOOK_RETRY_SCHEDULE).toEqual([
      0, 5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000,
    ]);
    expect(loadConfig({ ...base, WEBHOOK_RETRY_SCHEDULE: "0, 100ms,2s,1m" }).WEBHOOK_RETRY_SCHEDULE).toEqual([
      0, 100, 2_000, 60_000,
    ]);
    expect(() => loadConfig({ ...base, WEBHOOK_RETRY_SCHEDULE: "0,5x" })).toThrow(/WEBHOOK_RETRY_SCHEDULE.*"5x"/);
    expect(() => loadConfig({ ...base, WEBHOOK_RETRY_SCHEDULE: "25h" })).toThrow(/WEBHOOK_RETRY_SCHEDULE.*24 h/);
    expect(() => loadConfig({ ...base, WEBHOOK_RETRY_SCHEDULE: Array(21).fill("1s").join(",") })).toThrow(
      /WEBHOOK_RETRY_SCHEDULE must list 1 to 20 durations/,
    );
  });

  it("keeps 20 versions of an aspect and 3 of testResults by default; reads and refuses per-aspect exceptions", () => {
    expect(loadConfig(base)).toMatchObject({
      ASPECT_MAX_VERSIONS: 20,
      ASPECT_MAX_VERSIONS_BY_ASPECT: { testResults: 3 },
      ACCESS_TOKEN_RETENTION_DAYS: 30,
      AUDIT_RETENTION_DAYS: 400,
    });
    expect(
      loadConfig({ ...base, ASPECT_MAX_VERSIONS_BY_ASPECT: "testResults=5, ownership=50" })
        .ASPECT_MAX_VERSIONS_BY_ASPECT,
    ).toEqual({ testResults: 5, ownership: 50 });
    expect(() => loadConfig({ ...base, ASPECT_MAX_VERSIONS_BY_ASPECT: "testResults=0" })).toThrow(
      /'testResults=0' is not aspect=n with n from 1 to 1,000,000/,
    );
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
    ["LOG_FORMAT", "yaml", "LOG_FORMAT"],
    ["EVALUATION_CONCURRENCY", "0", "EVALUATION_CONCURRENCY must be at least 1"],
    ["TOKEN_SIGNING_KEY", "short", "TOKEN_SIGNING_KEY must be at least 32 characters"],
    ["ACCESS_TOKEN_FAMILY_MAX_DAYS", "0", "ACCESS_TOKEN_FAMILY_MAX_DAYS must be at least 1"],
    ["ACCESS_TOKEN_FAMILY_MAX_DAYS", "1.5", "ACCESS_TOKEN_FAMILY_MAX_DAYS must be a whole number"],
    ["ACCESS_TOKEN_FAMILY_MAX_DAYS", "P30D", "ACCESS_TOKEN_FAMILY_MAX_DAYS must be a whole number"],
    ["ACCESS_TOKEN_FAMILY_MAX_DAYS", "36501", "ACCESS_TOKEN_FAMILY_MAX_DAYS must be at most 36500"],
  ])("refuses %s=%s naming the variable", (name, value, message) => {
    expect(() => loadConfig({ ...base, [name]: value })).toThrow(message);
  });

  it("takes a Redis Cluster only with a hash-tagged QUEUE_PREFIX, so each queue's keys share one slot", () => {
    const cluster = { ...base, REDIS_URL: "redis-cluster://10.0.0.1:7000,10.0.0.2:7000" };
    expect(() => loadConfig(cluster)).toThrow("QUEUE_PREFIX must hold a {hash tag} on Redis Cluster, e.g. {mdp}");
    expect(loadConfig({ ...cluster, QUEUE_PREFIX: "{mdp}" }).QUEUE_PREFIX).toBe("{mdp}");
  });

  it("splits the evaluate queue in at most EVALUATION_CONCURRENCY shards, one by default", () => {
    expect(loadConfig(base).QUEUE_SHARDS).toBe(1);
    expect(loadConfig({ ...base, QUEUE_SHARDS: "3" }).QUEUE_SHARDS).toBe(3);
    expect(() => loadConfig({ ...base, QUEUE_SHARDS: "3", EVALUATION_CONCURRENCY: "2" })).toThrow(
      "QUEUE_SHARDS (3) must be at most EVALUATION_CONCURRENCY (2)",
    );
  });

  it("takes a direct URL for migrations beside a pooler's DATABASE_URL, none by default", () => {
    expect(loadConfig(base).DATABASE_DIRECT_URL).toBeUndefined();
    const direct = "postgresql://db:5432/x";
    expect(loadConfig({ ...base, DATABASE_DIRECT_URL: direct }).DATABASE_DIRECT_URL).toBe(direct);
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

    it("refuses LOG_FORMAT=pretty: a log collector reads JSON", () => {
      expect(() => loadConfig({ ...base, ...secrets, NODE_ENV: "production", LOG_FORMAT: "pretty" })).toThrow(
        "LOG_FORMAT=pretty is not allowed when NODE_ENV=production",
      );
      expect(loadConfig({ ...base, ...secrets, NODE_ENV: "production", LOG_FORMAT: "json" }).LOG_FORMAT).toBe("json");
    });
  });
});
