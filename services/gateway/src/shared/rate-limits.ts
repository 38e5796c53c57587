// Per-actor rate limits are @mdp/queues' (the Redis lib): the workers count a schedule's firings against its owner's
// limits on the same keys, with the same definition.
export { RateLimits, rateLimitKeyPrefix, RATE_LIMITS, type RateLimitName } from "@mdp/queues";
