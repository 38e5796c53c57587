import { mkdtempSync, rmSync } from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { ensureLocalServices } from "./local-services";

describe("ensureLocalServices", () => {
  it("uses the private PostgreSQL another command already runs, and leaves it running when it stops", async () => {
    // A stand-in for the server of a `pnpm start` already running (or that server itself, when one is).
    const standIn = net.createServer();
    await new Promise<void>((resolve) => {
      standIn.once("error", () => resolve()); // taken already: by that server
      standIn.listen(54329, "127.0.0.1", () => resolve());
    });
    const root = mkdtempSync(path.join(os.tmpdir(), "local-services-"));
    const databaseUrl = process.env.DATABASE_URL;
    delete process.env.DATABASE_URL;
    try {
      const services = await ensureLocalServices(root, { reuseDefaults: false });
      expect(services.databaseUrl).toBe("postgresql://postgres@127.0.0.1:54329/metadata_admin");
      // Stopping it would have stopped the other command's database under its services.
      await expect(services.stop()).resolves.toBeUndefined();
    } finally {
      if (databaseUrl !== undefined) process.env.DATABASE_URL = databaseUrl;
      standIn.close();
      rmSync(root, { recursive: true, force: true });
    }
  });
});
