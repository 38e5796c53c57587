/**
 * What a process costs, read from /proc: CPU time (utime + stime, every thread of the process; for a process tree,
 * its live members plus what its exited children left in the parent's cutime + cstime), resident memory, and the
 * machine's busy time (/proc/stat), so that a run can say how much of the machine others were using meanwhile.
 */
import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import os from "node:os";

const TICKS_PER_SECOND = Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100;

interface Stat {
  ppid: number;
  /** own CPU seconds, all threads */
  cpu: number;
  /** CPU seconds of its exited, reaped children */
  childrenCpu: number;
}

function readStat(pid: number): Stat | null {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return null; // gone
  }
  // The command name may hold spaces and parentheses: the fields start after the last ')'.
  const fields = text.slice(text.lastIndexOf(")") + 2).split(" ");
  const tick = (i: number) => Number(fields[i]) / TICKS_PER_SECOND;
  return { ppid: Number(fields[1]), cpu: tick(11) + tick(12), childrenCpu: tick(13) + tick(14) };
}

/** The pids whose parent is `pid`. */
export function childrenOf(pid: number): number[] {
  const children: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    if (readStat(Number(entry))?.ppid === pid) children.push(Number(entry));
  }
  return children;
}

/** A process to measure: one process, or a server and every process it forks (PostgreSQL's postmaster). */
export interface Measured {
  name: string;
  pid: number;
  tree?: boolean;
}

/** CPU seconds used so far by `m` (for a tree: the root, its live children, and its reaped children). */
export function cpuSeconds(m: Measured): number {
  const root = readStat(m.pid);
  if (!root) return NaN;
  if (!m.tree) return root.cpu;
  let sum = root.cpu + root.childrenCpu;
  for (const child of childrenOf(m.pid)) sum += readStat(child)?.cpu ?? 0;
  return sum;
}

function statusKb(pid: number, field: string): number {
  try {
    const match = new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return match ? Number(match[1]) : 0;
  } catch {
    return 0;
  }
}

function pssKb(pid: number): number {
  try {
    const match = /^Pss:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/smaps_rollup`, "utf8"));
    return match ? Number(match[1]) : 0;
  } catch {
    return 0;
  }
}

/**
 * Memory in MB: a process's VmRSS; a tree's summed PSS (proportional set size), because PostgreSQL's backends map the
 * same shared buffers and summing their RSS would count those once per backend.
 */
export function memoryMb(m: Measured): number {
  if (!m.tree) return statusKb(m.pid, "VmRSS") / 1024;
  let kb = pssKb(m.pid);
  for (const child of childrenOf(m.pid)) kb += pssKb(child);
  return kb / 1024;
}

/** Busy CPU seconds of the whole machine so far (every core; /proc/stat's first line less idle and iowait). */
export function machineBusySeconds(): number {
  const fields = readFileSync("/proc/stat", "utf8").split("\n")[0]!.trim().split(/\s+/).slice(1).map(Number);
  // user nice system idle iowait irq softirq steal (guest is already inside user)
  const busy = fields[0]! + fields[1]! + fields[2]! + fields[5]! + fields[6]! + fields[7]!;
  return busy / TICKS_PER_SECOND;
}

export const cores = () => os.cpus().length;

/** "3.16 5.56 7.47": the 1, 5 and 15 minute load averages. */
export const loadAverage = () =>
  os
    .loadavg()
    .map((x) => x.toFixed(2))
    .join(" ");
