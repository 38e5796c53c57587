/**
 * Every page the gateway serves to browsers (Swagger UI, the GraphQL explorer, Bull Board), loaded by headless Chromium
 * with the network closed to anything but this host: each request to another host is aborted and recorded. A page
 * passes when nothing was blocked, no request failed, the console logged no error, and it shows what it is for (the
 * explorer runs a query and shows the answer). A failing page leaves a screenshot in .data/browser-pages/.
 *
 * Chromium is Debian's package (`pnpm test` installs it when missing and run as root: scripts/chromium.ts), driven by
 * playwright-core, which downloads no browser. Without one this fails, saying how to get one: a browser test that
 * skips itself would pass where the pages were never looked at.
 */
import { spawnSync } from "node:child_process";
import { mkdirSync } from "node:fs";
import { resolve } from "node:path";
import { chromium, type Browser, type BrowserContext, type Page } from "playwright-core";
import { ROOT, createToken, startGateway, type Harness } from "./support/gateway-harness";

const ARTIFACTS = resolve(__dirname, "../../../.data/browser-pages");
const LOCAL_HOSTS = new Set(["127.0.0.1", "localhost", "[::1]"]);

function chromiumPath(): string {
  const path =
    process.env.CHROMIUM_PATH ||
    ["chromium", "chromium-browser"]
      .map((bin) => spawnSync("sh", ["-c", `command -v ${bin}`], { encoding: "utf8" }).stdout.trim())
      .find(Boolean);
  if (!path) {
    throw new Error(
      "No Chromium for the browser tests: install Debian's package (`apt-get install -y chromium`; `pnpm test` " +
        "does it when run as root) or set CHROMIUM_PATH to a Chromium or Chrome binary.",
    );
  }
  return path;
}

/** What a page did that it must not: requests blocked or failed, console errors, uncaught exceptions. */
interface Trouble {
  blocked: string[];
  failed: string[];
  errors: string[];
}

describe("browser pages, with the network closed to all but this host", () => {
  let h: Harness;
  let token: string;
  let browser: Browser;
  let context: BrowserContext;
  let trouble: Trouble;

  beforeAll(async () => {
    const executablePath = chromiumPath();
    h = await startGateway();
    token = (await createToken(h, ROOT)).token;
    browser = await chromium.launch({ executablePath, headless: true });
    // The pages' login: Basic, any user name, an access token as the password (http/browser-auth.ts).
    context = await browser.newContext({ httpCredentials: { username: "anyone", password: token } });
    await context.route("**/*", async (route) => {
      const url = new URL(route.request().url());
      if (url.protocol === "data:" || LOCAL_HOSTS.has(url.hostname)) return route.continue();
      trouble.blocked.push(url.href);
      await route.abort("blockedbyclient");
    });
  });

  afterAll(async () => {
    await browser?.close();
    await h?.close();
  });

  beforeEach(() => {
    trouble = { blocked: [], failed: [], errors: [] };
  });

  /** Opens `path`, runs `check` on it, and expects no trouble; a screenshot of the page when anything fails. */
  async function visit(name: string, path: string, check: (page: Page) => Promise<void>): Promise<void> {
    const page = await context.newPage();
    page.setDefaultTimeout(20_000);
    page.on("console", (message) => {
      if (message.type() === "error") trouble.errors.push(`console: ${message.text()}`);
    });
    page.on("pageerror", (error) => trouble.errors.push(`uncaught: ${error.message}`));
    page.on("requestfailed", (request) => {
      trouble.failed.push(`${request.method()} ${request.url()}: ${request.failure()?.errorText}`);
    });
    page.on("response", (response) => {
      if (response.status() >= 400) trouble.failed.push(`${response.status()} ${response.url()}`);
    });
    try {
      const response = await page.goto(`${h.baseUrl}${path}`, { waitUntil: "load" });
      expect(response?.status()).toBe(200);
      await check(page);
      // anything still loading has settled (Bull Board polls: its API calls are its own, and pass)
      await page.waitForLoadState("networkidle", { timeout: 10_000 }).catch(() => undefined);
      expect(trouble).toEqual({ blocked: [], failed: [], errors: [] });
    } catch (error) {
      mkdirSync(ARTIFACTS, { recursive: true });
      const screenshot = resolve(ARTIFACTS, `${name}.png`);
      await page.screenshot({ path: screenshot, fullPage: true }).catch(() => undefined);
      throw new Error(
        `${name} (${path}); screenshot: ${screenshot}\n${String(error)}\nseen: ${JSON.stringify(trouble, null, 2)}`,
      );
    } finally {
      await page.close();
    }
  }

  it("Swagger UI shows every operation, with no warning about the document", async () => {
    await visit("swagger-ui", "/api-docs/", async (page) => {
      await page.locator(".opblock").first().waitFor();
      expect(await page.locator(".opblock").count()).toBeGreaterThanOrEqual(13);
      // Swagger UI's red box of problems with the document (e.g. a dialect it does not support)
      expect(await page.locator(".errors-wrapper").count()).toBe(0);
    });
  });

  it("the GraphQL explorer is GraphiQL from the gateway, and runs a query through the page", async () => {
    await visit("graphql-explorer", "/api/graphql", async (page) => {
      await page.locator(".graphiql-container").waitFor();
      await page.locator(".graphiql-execute-button").click();
      await page.locator(".graphiql-response").getByText(ROOT).waitFor();
    });
  });

  it("Bull Board lists the queues, in its own fonts served by the gateway", async () => {
    await visit("queue-dashboard", "/admin/queues", async (page) => {
      await page.getByText("truncate-timeseries").first().waitFor();
      // the page's own font faces, once loaded (a string: this package's TypeScript has no DOM types)
      const fonts = (await page.evaluate(
        `document.fonts.ready.then(() => [...document.fonts].filter((f) => f.status === "loaded").map((f) => f.family.replaceAll(/["']/g, "")))`,
      )) as string[];
      expect(fonts).toContain("IBM Plex Sans");
    });
  });
});
