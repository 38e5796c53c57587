/**
 * The Chromium the browser tests drive (playwright-core, which downloads no browser of its own): Debian's `chromium`
 * package, installed here with apt-get when it is missing and we are root, as .ci/run does. `pnpm test` runs this
 * before the integration tier and hands the path to jest as CHROMIUM_PATH; a test that finds none fails saying why.
 */
import { spawnSync } from "node:child_process";

const CANDIDATES = ["chromium", "chromium-browser"];

/** The path of a Chromium on PATH (or CHROMIUM_PATH's), or undefined. */
export function findChromium(): string | undefined {
  if (process.env.CHROMIUM_PATH) return process.env.CHROMIUM_PATH;
  for (const bin of CANDIDATES) {
    const found = spawnSync("sh", ["-c", `command -v ${bin}`], { encoding: "utf8" });
    if (found.status === 0 && found.stdout.trim()) return found.stdout.trim();
  }
  return undefined;
}

/** Finds Chromium, installing Debian's package first when it is missing and we may; undefined when there is none. */
export function ensureChromium(): string | undefined {
  const found = findChromium();
  if (found || process.getuid?.() !== 0) return found;
  process.stdout.write("installing chromium (apt-get) for the browser tests\n");
  const install = () =>
    spawnSync("apt-get", ["install", "-y", "--no-install-recommends", "chromium"], { stdio: "inherit" });
  if (install().status !== 0) {
    spawnSync("apt-get", ["update"], { stdio: "inherit" });
    install();
  }
  return findChromium();
}

export const CHROMIUM_MISSING =
  "No Chromium for the browser tests: install Debian's package (`apt-get install -y chromium`; `pnpm test` does it " +
  "when run as root) or set CHROMIUM_PATH to a Chromium or Chrome binary.";

if (require.main === module) {
  const path = ensureChromium();
  if (!path) {
    process.stderr.write(`${CHROMIUM_MISSING}\n`);
    process.exit(1);
  }
  process.stdout.write(`${path}\n`);
}
