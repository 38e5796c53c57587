import { EntityRegistry, type Config, type Logger } from "@mdp/core";
import { AspectRepository, TimeseriesStore, type Database } from "@mdp/db";
import {
  closeRedis,
  createRedis,
  Producer,
  QUEUE_NAMES,
  startChores,
  ReplyInbox,
  RetentionSchedules,
  ScheduleSyncRequests,
  TestSchedules,
} from "@mdp/queues";
import type { RedisConnection } from "@mdp/queues";
import { EvaluationLifecycle } from "@mdp/tasks";
import { AuditService } from "./audit/audit.service";
import { WebhookService } from "./webhooks/webhook.service";
import { Authenticator } from "./auth/authenticator";
import { InvalidationBus } from "./events/invalidation-bus";
import { IngestionService } from "./metadata/ingestion.service";
import { EvaluationBatcher } from "./metadata-tests/evaluation-batcher";
import { DefinitionRunService } from "./metadata-tests/definition-run.service";
import { EvaluationService } from "./metadata-tests/evaluation.service";
import { MetadataTestService } from "./metadata-tests/metadata-test.service";
import { TestRunService } from "./metadata-tests/test-run.service";
import { TestRunDiffService } from "./metadata-tests/test-run-diff.service";
import { PlatformEventsService } from "./events/platform-events.service";
import { TestImpactService } from "./metadata-tests/test-impact.service";
import { RetentionService } from "./retention/retention.service";
import { TaskService } from "./operations/task.service";
import { TruncationService } from "./operations/truncation.service";
import type { Services } from "./graphql/context";
import { GroupService } from "./policies/group.service";
import { PolicyEngine } from "./policies/policy-engine";
import { PolicyService } from "./policies/policy.service";
import { DelegatedWorkService } from "./incident-response/delegated-work.service";
import { ServiceAccountService } from "./service-accounts/service-account.service";
import { TokenService } from "./tokens/token.service";
import { TokenStore } from "./tokens/token.store";
import { SessionTokens } from "./tokens/session-tokens";
import { WebAppService } from "./webapp/web-app.service";
import { TokenVerifier } from "./tokens/token.verifier";
import { TokenRotation } from "./tokens/token-rotation";
import { TokenUsageRecorder } from "./token-usage/token-usage.recorder";
import { TokenUsageService } from "./token-usage/token-usage.service";
import { tokenExpiryNoticeChore } from "./tokens/token-expiry-notices";
import { RateLimits } from "./shared/rate-limits";

export interface Connections {
  /** Prisma and pg on one pool */
  db: Database;
  /** commands and publishing */
  redis: RedisConnection;
  /** the invalidation bus's subscriber: a subscribed ioredis connection can do nothing else */
  subscriber: RedisConnection;
  /**
   * the evaluation replies' subscriber, apart from the invalidations': a reply Redis refuses to buffer (its pub/sub
   * output limit) drops the connection it arrives on, which must not take the invalidations with it
   */
  replySubscriber: RedisConnection;
}

/** Builds the gateway's domain services on the given connections; `stop` flushes what they hold in memory. */
export async function composeServices(config: Config, connections: Connections, logger: Logger) {
  const { prisma } = connections.db;
  const bus = new InvalidationBus(
    connections.redis,
    connections.subscriber,
    `${config.QUEUE_PREFIX}:invalidations`,
    logger,
  );
  const engine = new PolicyEngine(prisma, config.ROOT_USER_URN, bus);
  // Every use of a token (its lastUsedAt, and with ACCESS_TOKEN_USAGE_RECORDING what it was used for): one recorder.
  const tokenUses = new TokenUsageRecorder(prisma, logger);
  const tokenStore = new TokenStore(connections.db, config.URN_NAMESPACE);
  const tokenVerifier = new TokenVerifier(tokenStore, bus, tokenUses, config);
  // A connection of its own: a limit check must fail fast when Redis is away, which BullMQ's settings do not.
  const rateLimits = new RateLimits(RateLimits.connect(config, logger), config);
  const tokens = new TokenService({ store: tokenStore, verifier: tokenVerifier, policies: engine, config, rateLimits });
  const tokenRotation = new TokenRotation({
    prisma,
    store: tokenStore,
    verifier: tokenVerifier,
    policies: engine,
    config,
    logger,
    rateLimits,
  });
  tokenVerifier.onReuse((tokenId, familyId, actorUrn) => tokenRotation.reuseDetected(tokenId, familyId, actorUrn));
  const tokenUsage = new TokenUsageService({
    prisma,
    recorder: tokenUses,
    store: tokenStore,
    verifier: tokenVerifier,
    config,
    logger,
  });
  const registry = EntityRegistry.load(config.ENTITY_REGISTRY_PATH);
  const evaluateProducer = new Producer("evaluate", connections.redis, config.QUEUE_PREFIX, config.QUEUE_SHARDS);
  const truncateProducer = new Producer("truncate", connections.redis, config.QUEUE_PREFIX);
  const tasks = new TaskService(
    connections.db,
    engine,
    [truncateProducer, evaluateProducer],
    logger,
    config.URN_NAMESPACE,
  );
  const aspects = new AspectRepository();
  const timeseries = new TimeseriesStore(connections.db.pool, {
    maxDaysPerWrite: config.TIMESERIES_MAX_DAYS_PER_WRITE,
    maxPartitionsPerAspect: config.TIMESERIES_MAX_PARTITIONS_PER_ASPECT,
    maxFutureMillis: config.TIMESERIES_MAX_FUTURE_MS,
  });
  const truncation = new TruncationService({
    db: connections.db,
    registry,
    store: timeseries,
    producer: truncateProducer,
    logger,
    urnNamespace: config.URN_NAMESPACE,
  });
  // The gateway writes schedules' rows and asks the schedule sync (the workers', the one writer of job schedulers) to
  // make their schedulers follow; it only reads the schedulers (next runs) on the schedules' queues.
  const scheduleSyncProducer = new Producer("scheduleSync", connections.redis, config.QUEUE_PREFIX);
  const scheduleSync = new ScheduleSyncRequests(scheduleSyncProducer);
  // Shown in the queue dashboard: the workers' chores (each firing of their job schedulers, once per cluster).
  const choreQueues = [
    new Producer("truncationChores", connections.redis, config.QUEUE_PREFIX),
    new Producer("evaluationChores", connections.redis, config.QUEUE_PREFIX),
    new Producer("webhookChores", connections.redis, config.QUEUE_PREFIX),
  ];
  // The gateways' own chores (token usage's retention, idle tokens, tokens nearing expiry): each firing runs on one gateway, which tells the
  // others over the invalidation bus. A BullMQ worker blocks its connection: one of its own.
  const choreConnection = createRedis(config.REDIS_URL, "worker");
  const choreProducerConnection = createRedis(config.REDIS_URL, "worker");
  const gatewayChores = startChores(
    "gatewayChores",
    [...tokenUsage.chores(), tokenExpiryNoticeChore(connections.db, logger)],
    {
      connection: choreConnection,
      producerConnection: choreProducerConnection,
      prefix: config.QUEUE_PREFIX,
      logger,
    },
  );
  const retentionProducer = new Producer("retention", connections.redis, config.QUEUE_PREFIX);
  const retention = new RetentionService({
    db: connections.db,
    registry,
    truncation,
    schedules: new RetentionSchedules(retentionProducer.queue),
    scheduleSync,
    logger,
    config,
  });
  const testScheduleProducer = new Producer("testSchedule", connections.redis, config.QUEUE_PREFIX);
  const evaluationReplies = await ReplyInbox.open(
    connections.replySubscriber,
    config.QUEUE_PREFIX,
    QUEUE_NAMES.evaluate,
    config.QUEUE_SHARDS,
  );
  const evaluateJobState = (jobId: string) => evaluateProducer.queueFor(jobId).getJobState(jobId);
  // Reads only (the gateway holds no lease): the answers workers kept for requests whose reply was lost.
  const storedEvaluations = new EvaluationLifecycle(connections.db.pool, { owner: "gateway", leaseMs: 0 });
  const evaluationBatcher = new EvaluationBatcher(
    evaluateProducer,
    evaluationReplies,
    config.EVALUATE_TIMEOUT_MS,
    undefined,
    {
      storedAnswers: (taskIds) => storedEvaluations.storedAnswers(taskIds),
      jobState: evaluateJobState,
      logger,
    },
  );
  const evaluation = new EvaluationService({
    db: connections.db,
    registry,
    engine,
    batcher: evaluationBatcher,
    timeoutMs: config.EVALUATE_TIMEOUT_MS,
    logger,
    jobState: evaluateJobState,
    rateLimits,
  });
  const delegatedWork = new DelegatedWorkService({
    db: connections.db,
    engine,
    store: tokenStore,
    verifier: tokenVerifier,
    tasks,
    config,
    logger,
  });
  const services: Services = {
    prisma,
    engine,
    tokens,
    tokenRotation,
    tokenUsage,
    policies: new PolicyService(prisma, bus, config, connections.db.stale),
    groups: new GroupService(prisma, bus, config, connections.db.stale),
    audit: new AuditService(prisma, connections.db.stale),
    tests: new MetadataTestService({
      prisma,
      pool: connections.db.pool,
      engine,
      registry,
      config,
      schedules: new TestSchedules(testScheduleProducer.queue),
      logger,
      scheduleSync,
      reads: connections.db.stale,
    }),
    testRuns: new TestRunService({
      db: connections.db,
      registry,
      producer: evaluateProducer,
      logger,
      rateLimits,
    }),
    definitionRuns: new DefinitionRunService(engine, registry, evaluation, config),
    testRunDiffs: new TestRunDiffService(connections.db),
    platformEvents: new PlatformEventsService(connections.db, engine),
    testImpact: new TestImpactService({
      prisma,
      registry,
      engine,
      producer: evaluateProducer,
      inbox: () => evaluationReplies,
      timeoutMs: config.EVALUATE_TIMEOUT_MS,
      logger,
      rateLimits,
    }),
    tasks,
    retention,
    rateLimits,
    delegatedWork,
    serviceAccounts: new ServiceAccountService(connections.db, delegatedWork, config),
    webhooks: new WebhookService({ db: connections.db, engine, config, logger }),
    webApp: new WebAppService(connections.db, prisma, engine),
  };
  const ingestion = new IngestionService(connections.db, registry, aspects, timeseries);
  const http = {
    ...{ db: connections.db, registry, aspects, timeseries, ingestion, engine, truncation, tasks, evaluation },
    reads: connections.db.stale,
    rateLimits: services.rateLimits,
    sessions: new SessionTokens(tokenStore, config),
  };
  await bus.start();
  const authenticator = new Authenticator(config, (token) => tokenVerifier.verify(token));
  const stop = async () => {
    await tokenUses.stop();
    // Not waiting for a firing in flight (a chore is idempotent; its job, left active, is taken again once its lock
    // lapses): BullMQ's graceful worker.close() waits on its main loop, which can wait forever on a Redis that went
    // away and came back (seen with revocation-outage's private Redis).
    await gatewayChores.stop({ force: true });
    await Promise.allSettled([closeRedis(choreConnection), closeRedis(choreProducerConnection)]);
    await bus.stop(); // says goodbye: peers would take the silence for a lost channel
    await services.rateLimits.close();
    await evaluationBatcher.close();
    await Promise.all([
      truncateProducer.close(),
      evaluateProducer.close(),
      retentionProducer.close(),
      testScheduleProducer.close(),
      scheduleSyncProducer.close(),
      ...choreQueues.map((q) => q.close()),
      evaluationReplies.close(),
    ]);
  };
  return {
    services,
    http,
    queues: [
      truncateProducer.queue,
      ...evaluateProducer.queues, // its shards in order: the dashboard names them evaluate-tests, evaluate-tests-1, …
      retentionProducer.queue,
      testScheduleProducer.queue,
      scheduleSyncProducer.queue,
      ...choreQueues.map((q) => q.queue),
      gatewayChores.producer.queue,
    ],
    authenticator,
    gatewayChores,
    stop,
  };
}
