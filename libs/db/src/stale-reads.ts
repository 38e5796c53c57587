import type pg from "pg";
import { auditEventPage } from "./audit";
import { listPlatformEventRows } from "./events/platform-event-listing";
import { listWebhookDeliveries } from "./events/webhook-delivery-log.repository";
import { listWebhookSubscriptions } from "./events/webhook-subscription.repository";
import type { PrismaClient } from "./generated/prisma/client";
import { testPage } from "./metadata-tests/metadata-test.repository";
import { testResultCounts, transitionPage } from "./metadata-tests/test-results.repository";
import { findRunDiff } from "./metadata-tests/test-run-diff.repository";
import { groupPage } from "./policies/group.repository";
import { policyPage } from "./policies/policy.repository";
import type { StaleReads } from "./read-replicas";
import { retentionPolicyPage } from "./retention/retention-policy.repository";
import { listTasks } from "./tasks/task-listing";
import { testRunEvents } from "./tasks/test-run-events";
import type { TimeseriesStore } from "./timeseries/timeseries.store";
import { accessTokenPage } from "./tokens/access-token-list.repository";
import { serviceAccountPage } from "./tokens/service-account.repository";

const onPool =
  <A extends unknown[], R>(statement: (db: pg.Pool, ...args: A) => Promise<R>) =>
  (reads: StaleReads, ...args: A): Promise<R> =>
    reads.read((server) => statement(server.pool, ...args));

const onPrisma =
  <A extends unknown[], R>(statement: (prisma: PrismaClient, ...args: A) => Promise<R>) =>
  (reads: StaleReads, ...args: A): Promise<R> =>
    reads.read((server) => statement(server.prisma, ...args));

/**
 * The statements that may read a replica (docs/postgres.md), each declared here by name: listings and reports whose
 * reader accepts an answer up to REPLICA_MAX_LAG_MS old, read by nothing that then writes. Each takes the process's
 * `Database.stale` instead of a pool or client; the rest of the repositories' statements, authentication and
 * authorization above all, take the primary's. A reader that just wrote reads the primary until a replica has its write.
 */
export const replicaReads = {
  accessTokenPage: onPool(accessTokenPage),
  serviceAccountPage: onPrisma(serviceAccountPage),
  listTasks: onPool(listTasks),
  testPage: onPrisma(testPage),
  testResultCounts: onPool(testResultCounts),
  transitionPage: onPrisma(transitionPage),
  testRunEvents: onPool(testRunEvents),
  findRunDiff: onPool(findRunDiff),
  policyPage: onPrisma(policyPage),
  groupPage: onPrisma(groupPage),
  auditEventPage: onPrisma(auditEventPage),
  retentionPolicyPage: onPrisma(retentionPolicyPage),
  listPlatformEventRows: onPool(listPlatformEventRows),
  listWebhookSubscriptions: onPrisma(listWebhookSubscriptions),
  listWebhookDeliveries: onPool(listWebhookDeliveries),
  /** getIndexSizes: the partitions' counters, catalog sizes and time range */
  timeseriesSizes: (reads: StaleReads, store: TimeseriesStore) => reads.read((server) => store.sizes(server.pool)),
};
