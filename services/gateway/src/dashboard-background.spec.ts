/**
 * README ("Operating it"): the gateway logs the dashboard's assets and its polling at debug, one line per other request
 * at info. Every file the dashboard's page loads from the gateway counts as an asset, the fonts it serves in place of
 * Google's included (they were logged at info, a dozen lines per page view).
 */
import { isDashboardBackground } from "./app";
import { DASHBOARD_FONTS_CSS } from "./http/dashboard-fonts";
import { DASHBOARD_PATH } from "./http/queue-dashboard";

describe("the dashboard's background traffic (logged at debug when it succeeds)", () => {
  it.each([
    `${DASHBOARD_PATH}/static/js/main.js`,
    `${DASHBOARD_PATH}/${DASHBOARD_FONTS_CSS}`,
    `${DASHBOARD_PATH}/fonts/sans/ibm-plex-sans-latin-400-normal.woff2`,
    `${DASHBOARD_PATH}/api/queues?activeQueue=truncate-timeseries&page=1`,
  ])("GET %s", (url) => {
    expect(isDashboardBackground("GET", url)).toBe(true);
    expect(isDashboardBackground("HEAD", url)).toBe(true);
  });

  it.each([
    ["GET", DASHBOARD_PATH],
    ["GET", `${DASHBOARD_PATH}/queue/truncate-timeseries?status=completed`],
    ["PUT", `${DASHBOARD_PATH}/api/queues/truncate-timeseries/clean/completed`],
    ["DELETE", `${DASHBOARD_PATH}/api/queues/truncate-timeseries/1`],
    ["GET", "/api/graphql"],
  ])("not %s %s: pages, writes and everything else stay at info", (method, url) => {
    expect(isDashboardBackground(method, url)).toBe(false);
  });
});
