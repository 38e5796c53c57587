import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { ensureLocalServices } from "./local-services";

describe("ensureLocalServices, with a private PostgreSQL listening already", () => {
  let standIn: net.Server;
  let root: string;
  const databaseUrl = process.env.DATABASE_URL;

  beforeEach(async () => {
    // A stand-in for the server of a `pnpm start` (or that server itself, when one runs here).
    standIn = net.createServer();
    await new Promise<void>((resolve) => {
      standIn.once("error", () => resolve()); // taken already: by that server
      standIn.listen(54329, "127.0.0.1", () => resolve());
    });
    root = mkdtempSync(path.join(os.tmpdir(), "local-services-"));
    mkdirSync(path.join(root, ".data"));
    delete process.env.DATABASE_URL;
  });
  afterEach(() => {
    if (databaseUrl !== undefined) process.env.DATABASE_URL = databaseUrl;
    standIn.close();
    rmSync(root, { recursive: true, force: true });
  });

  it("uses it, and leaves it running, when the command that started it still runs", async () => {
    writeFileSync(path.join(root, ".data", "postgres.owner"), String(process.pid));
    const services = await ensureLocalServices(root, { reuseDefaults: false });
    expect(services.databaseUrl).toBe("postgresql://postgres@127.0.0.1:54329/metadata_admin");
    // Stopping it would stop the other command's database under its services.
    await expect(services.stop()).resolves.toBeUndefined();
  });

  it("uses it, and leaves it running, when nothing says it is this checkout's (another checkout's server)", async () => {
    const services = await ensureLocalServices(root, { reuseDefaults: false });
    await expect(services.stop()).resolves.toBeUndefined();
  });

  it("takes an empty DATABASE_URL or REDIS_URL as unset, as the services do", async () => {
    writeFileSync(path.join(root, ".data", "postgres.owner"), String(process.pid));
    const redisUrl = process.env.REDIS_URL;
    Object.assign(process.env, { DATABASE_URL: "", REDIS_URL: "" });
    try {
      const services = await ensureLocalServices(root, { reuseDefaults: true });
      expect(services.databaseUrl).toMatch(/^postgresql:\/\/postgres@127\.0\.0\.1:(5432|54329)\/metadata_admin$/);
      expect(services.redisUrl).toMatch(/^redis:\/\/127\.0\.0\.1:(6379|63799)$/);
      await services.stop();
    } finally {
      if (redisUrl === undefined) delete process.env.REDIS_URL;
      else process.env.REDIS_URL = redisUrl;
    }
  });

  it("stops it on exit when the command that started it is gone, as it would have", async () => {
    const gone = spawn(process.execPath, ["-e", ""]);
    await new Promise((resolve) => gone.once("exit", resolve));
    writeFileSync(path.join(root, ".data", "postgres.owner"), String(gone.pid));
    mkdirSync(path.join(root, ".data", "postgres"));
    writeFileSync(path.join(root, ".data", "postgres", "PG_VERSION"), "15\n"); // its data directory, made before
    const services = await ensureLocalServices(root, { reuseDefaults: false });
    // pg_ctl stop is run on its data directory (which this test's stand-in has not: so it fails).
    await expect(services.stop()).rejects.toThrow(/pg_ctl .*-D \S+local-services-\S+ -m fast -w stop failed/);
  });
});
