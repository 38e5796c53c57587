/**
 * The truncation worker's public entry, for what runs its handler outside its own process (the gateway's tests run it
 * in process); `main.ts` is the process.
 */
export {
  createTruncateHandler,
  recordGivenUp,
  truncationReconciled,
  type TruncateDeps,
  type TruncateProgress,
} from "./truncate.processor";
