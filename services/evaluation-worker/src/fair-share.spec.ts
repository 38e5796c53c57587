import { DelayedError, type Job } from "bullmq";
import type { Payload } from "@mdp/queues";
import { JobShare, ThreadShare, withJobShare } from "./fair-share";

/** A task that ends when told to, recording when it started. */
function controllable(started: string[], name: string) {
  let finish!: (stopped: boolean) => void;
  const done = new Promise<boolean>((resolve) => (finish = resolve));
  return { start: () => (started.push(name), done), finish };
}

const turn = () => new Promise((resolve) => setImmediate(resolve));

describe("ThreadShare", () => {
  it("gives one actor at most its share of the threads, and the others' requests the thread it leaves", async () => {
    const share = new ThreadShare(3, 100);
    share.setThreads(4, false);
    const started: string[] = [];
    const hogs = Array.from({ length: 6 }, (_, i) => controllable(started, `hog${i}`));
    for (const hog of hogs) void share.run("hog", hog.start);
    await turn();
    expect(started).toEqual(["hog0", "hog1", "hog2"]);
    const other = controllable(started, "other");
    void share.run("other", other.start);
    await turn();
    expect(started).toContain("other");
    expect(started.filter((s) => s.startsWith("hog"))).toHaveLength(3);
  });

  it("serves waiting actors round-robin, so one actor's backlog never sits in front of another's request", async () => {
    const share = new ThreadShare(1, 100);
    share.setThreads(1, false);
    const started: string[] = [];
    const tasks = new Map<string, ReturnType<typeof controllable>>();
    const run = (actor: string, name: string) => {
      const task = controllable(started, name);
      tasks.set(name, task);
      void share.run(actor, task.start);
    };
    run("a", "a1");
    run("a", "a2");
    run("a", "a3");
    run("b", "b1");
    await turn();
    tasks.get("a1")!.finish(false);
    await turn();
    tasks.get(started.at(-1)!)!.finish(false);
    await turn();
    expect(started.slice(0, 3)).toEqual(["a1", "b1", "a2"]);
  });

  it("counts a thread stopped at a limit against its actor until its replacement is ready", async () => {
    const share = new ThreadShare(1, 100);
    share.setThreads(2, false);
    const started: string[] = [];
    const hog = controllable(started, "hog1");
    void share.run("hog", hog.start, (stopped) => stopped);
    await turn();
    hog.finish(true); // stopped: its thread is being replaced
    share.setThreads(1, false);
    await turn();
    const next = controllable(started, "hog2");
    void share.run("hog", next.start);
    const other = controllable(started, "other");
    void share.run("other", other.start);
    await turn();
    expect(started).toEqual(["hog1", "other"]); // the hog waits for its replacement; the other takes the ready thread
    other.finish(false);
    share.setThreads(2, true);
    await turn();
    expect(started).toEqual(["hog1", "other", "hog2"]);
  });
});

describe("JobShare", () => {
  it("keeps the last free slot for an actor with no job here, handing the job back to the queue", async () => {
    const share = new JobShare(3);
    const finish: Array<() => void> = [];
    const handler = withJobShare(() => new Promise<void>((resolve) => finish.push(resolve)), share);
    const job = { moveToDelayed: jest.fn(async () => undefined) } as unknown as Job;
    const evaluate = (actorUrn: string) =>
      handler({ kind: "evaluate", items: [{ actorUrn }] } as unknown as Payload<"evaluate">, job, "token");
    const running = [evaluate("hog"), evaluate("hog")];
    await expect(evaluate("hog")).rejects.toBeInstanceOf(DelayedError); // the last slot
    expect(job.moveToDelayed).toHaveBeenCalledTimes(1);
    running.push(evaluate("other"));
    expect(share.held).toBe(3);
    finish.splice(0).forEach((done) => done());
    await Promise.all(running);
    expect(share.held).toBe(0);
    running.push(evaluate("hog"), evaluate("hog")); // three free again: not the last
    expect(share.held).toBe(2);
    finish.splice(0).forEach((done) => done());
    await Promise.all(running);
  });
});
