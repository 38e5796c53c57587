import { setFlagsFromString } from "node:v8";

/**
 * Full collections when the old generation has grown by `percent` of what survived the last one (V8's
 * --heap-growing-percent), unless node was given its own --heap-growing-percent (command line or NODE_OPTIONS), which
 * wins. Set at run time, so that it holds wherever the service is started (source, build, image). No heap limit: a
 * larger live set still gets the heap it needs.
 */
export function setHeapGrowingPercent(percent: number): void {
  if ([...process.execArgv, process.env.NODE_OPTIONS ?? ""].some((flag) => flag.includes("--heap-growing-percent"))) {
    return;
  }
  setFlagsFromString(`--heap-growing-percent=${percent}`);
}
