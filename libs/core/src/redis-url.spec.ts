import { hashTagOf, parseRedisUrl } from "./redis-url";

describe("parseRedisUrl", () => {
  it("passes a single server's URL through as ioredis reads it", () => {
    expect(parseRedisUrl("redis://:secret@cache:6380/2")).toEqual({
      cluster: false,
      url: "redis://:secret@cache:6380/2",
    });
  });

  it("reads a cluster's seed nodes, credentials and TLS", () => {
    expect(parseRedisUrl("rediss-cluster://app:p%40ss@10.0.0.1:7000,[::1]:7001,node-c:7002/")).toEqual({
      cluster: true,
      nodes: [
        { host: "10.0.0.1", port: 7000 },
        { host: "::1", port: 7001 },
        { host: "node-c", port: 7002 },
      ],
      username: "app",
      password: "p@ss",
      tls: true,
    });
    expect(parseRedisUrl("redis-cluster://127.0.0.1:7000")).toMatchObject({ cluster: true, tls: false });
  });

  it.each(["redis-cluster://", "redis-cluster://h1:7000,,h2:7001", "redis-cluster://h1:0", "http://h1:7000"])(
    "refuses %s",
    (url) => expect(() => parseRedisUrl(url)).toThrow(/must /),
  );
});

describe("hashTagOf", () => {
  it("finds the part Redis Cluster hashes, as Redis does (the first {…}, when not empty)", () => {
    expect(hashTagOf("{mdp}")).toBe("mdp");
    expect(hashTagOf("prod:{mdp}:x")).toBe("mdp");
    expect(hashTagOf("mdp")).toBeNull();
    expect(hashTagOf("{}mdp")).toBeNull();
  });
});
