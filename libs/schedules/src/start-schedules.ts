import { randomUUID } from "node:crypto";
import type { Worker } from "bullmq";
import type { Logger } from "@mdp/core";
import {
  closeWorker,
  createWorker,
  Producer,
  ScheduleSyncRequests,
  startChores,
  type JobObserver,
  type RedisConnection,
  type RunningChores,
} from "@mdp/queues";
import { firingHandler } from "./schedule-firing";
import type { FiringDeps, FiringQueue, OwnedRow, ScheduleKind } from "./schedule-kind";
import { ScheduleSync } from "./schedule-sync";

export interface ScheduleProcessDeps extends Omit<FiringDeps, "sync"> {
  /** the kinds whose firings this process turns into tasks (it holds their task queue's producer) */
  kinds: ReadonlyArray<ScheduleKind<OwnedRow, FiringQueue>>;
  connection: RedisConnection;
  producerConnection: RedisConnection;
  prefix: string;
  logger: Logger;
  observer?: JobObserver;
  /** how often the full sync runs (FULL_SYNC_EVERY_MS) */
  fullSyncEveryMs?: number;
}

export interface RunningSchedules {
  /** the firing workers, one per kind */
  workers: Worker[];
  sync: ScheduleSync;
  syncChores: RunningChores;
  requests: ScheduleSyncRequests;
  /** closes the firing workers and the sync's (a running job finishes) */
  stop: () => Promise<void>;
}

/**
 * The scheduled-work side of a worker process: a worker per kind it fires (one job at a time in the process), and its
 * share of the schedule-sync queue (the one writer of the schedulers, one job at a time in the cluster). At start it
 * asks for a full sync, which converges schedulers that Redis lost while no process ran.
 */
export function startSchedules(deps: ScheduleProcessDeps): RunningSchedules {
  const requests = new ScheduleSyncRequests(new Producer("scheduleSync", deps.producerConnection, deps.prefix));
  const firingDeps: FiringDeps = { ...deps, sync: requests };
  const workers = deps.kinds.map((kind) => {
    const worker = createWorker(kind.firingQueue, firingHandler(kind, firingDeps), {
      connection: deps.connection,
      prefix: deps.prefix,
      concurrency: 1,
      logger: deps.logger,
      observer: deps.observer,
    });
    void worker.run();
    return worker;
  });
  const sync = new ScheduleSync(deps.db, deps.producerConnection, deps.prefix, deps.logger);
  const askFullSync = () => requests.producer.enqueue(randomUUID(), {}).then(() => undefined);
  const syncChores = startChores("scheduleSync", sync.chores(deps.fullSyncEveryMs), {
    connection: deps.connection,
    producerConnection: deps.producerConnection,
    prefix: deps.prefix,
    logger: deps.logger,
    observer: deps.observer,
    globalConcurrency: 1,
    // Redis back, maybe empty: a full sync now restores the schedulers and runs late the slots that passed meanwhile.
    onRedisBack: askFullSync,
  });
  askFullSync().catch((error: unknown) => {
    deps.logger.warn({ err: error }, "could not ask for a full schedule sync at start; the periodic one will run");
  });
  return {
    workers,
    sync,
    syncChores,
    requests,
    stop: async () => {
      await Promise.all(workers.map((w) => closeWorker(w)));
      await syncChores.stop();
      await sync.close();
      await requests.producer.close();
    },
  };
}
