import type { Config, Logger } from "@mdp/core";
import type { PrismaClient } from "@mdp/db";
import type { Redis } from "ioredis";
import { AuditService } from "./audit/audit.service";
import { Authenticator } from "./auth/authenticator";
import { InvalidationBus } from "./events/invalidation-bus";
import type { Services } from "./graphql/context";
import { GroupService } from "./policies/group.service";
import { PolicyEngine } from "./policies/policy-engine";
import { PolicyService } from "./policies/policy.service";
import { LastUsedRecorder } from "./tokens/last-used.recorder";
import { TokenService } from "./tokens/token.service";

export interface Connections {
  prisma: PrismaClient;
  /** commands and publishing */
  redis: Redis;
  /** a connection of its own: a subscribed ioredis connection can do nothing else */
  subscriber: Redis;
}

/** Builds the gateway's domain services on the given connections; `stop` flushes what they hold in memory. */
export async function composeServices(config: Config, connections: Connections, logger: Logger) {
  const { prisma } = connections;
  const bus = new InvalidationBus(
    connections.redis,
    connections.subscriber,
    `${config.QUEUE_PREFIX}:invalidations`,
    logger,
  );
  const engine = new PolicyEngine(prisma, config.ROOT_USER_URN, bus);
  const lastUsed = new LastUsedRecorder(prisma, logger);
  const tokens = new TokenService(prisma, engine, bus, lastUsed, config);
  const services: Services = {
    prisma,
    engine,
    tokens,
    policies: new PolicyService(prisma, engine, bus, config),
    groups: new GroupService(prisma, engine, bus, config),
    audit: new AuditService(prisma, engine),
  };
  await bus.start();
  const authenticator = new Authenticator(config, (token) => tokens.verify(token));
  return { services, authenticator, stop: () => lastUsed.stop() };
}
