import { outboxConsumerLoop, type Logger, type PeriodicLoop } from "@mdp/core";
import type { OnChangeEvaluator } from "./on-change.consumer";

/**
 * Each worker process's share of evaluation on change (outboxConsumerLoop): its partitions' passes; stopped, it ends
 * its owners' work in flight and releases its partitions for the other workers to take at once.
 */
export function onChangeLoop(evaluator: OnChangeEvaluator, pollMs: number, logger: Logger): PeriodicLoop {
  const loop = outboxConsumerLoop("evaluate-on-change", () => evaluator.drain(), pollMs, logger);
  evaluator.keepLeases();
  return {
    async stop() {
      await loop.stop();
      await evaluator.close();
    },
  };
}
