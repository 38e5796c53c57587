import express, { Router, type RequestHandler, type Response } from "express";
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";

/**
 * Bull Board's page asks Google Fonts for IBM Plex Sans and Mono, which a network with no way out never answers (and
 * the gateway's Content-Security-Policy refuses). The same fonts come from npm instead (Fontsource's packages), served
 * under the dashboard's own path, and its page links them there.
 */
const FAMILIES = {
  sans: { dir: dirname(require.resolve("@fontsource/ibm-plex-sans/package.json")), weights: [400, 500, 600] },
  mono: { dir: dirname(require.resolve("@fontsource/ibm-plex-mono/package.json")), weights: [400, 500] },
};

/** Relative to the page's `<base href>`, the dashboard's path. */
export const DASHBOARD_FONTS_CSS = "fonts/ibm-plex.css";

/** The page's `<link>` to Google Fonts (@bull-board/ui's index.ejs), whatever families and weights it names. */
const GOOGLE_FONTS_LINK = /<link\b[^>]*\bhref="https:\/\/fonts\.googleapis\.com\/[^"]*"[^>]*>/g;

/** The page with its fonts linked here instead of at Google. */
export const withLocalFonts = (html: string) =>
  html.replace(GOOGLE_FONTS_LINK, `<link href="${DASHBOARD_FONTS_CSS}" rel="stylesheet">`);

/**
 * Serves the fonts (`fonts/…`) and rewrites the pages Bull Board renders so they link them: mount before Bull Board's
 * router, under the same path.
 */
export function dashboardFonts(): Router {
  // Fontsource's CSS per weight, its `./files/` URLs pointing at where each family's files are served.
  const css = Object.entries(FAMILIES)
    .flatMap(([family, { dir, weights }]) =>
      weights.map((weight) =>
        readFileSync(join(dir, `${weight}.css`), "utf8").replaceAll("url(./files/", `url(${family}/`),
      ),
    )
    .join("\n");
  const router = Router();
  router.get(`/${DASHBOARD_FONTS_CSS}`, (_req, res) => {
    res.type("css").send(css);
  });
  for (const [family, { dir }] of Object.entries(FAMILIES)) {
    router.use(`/fonts/${family}`, express.static(join(dir, "files"), { fallthrough: false, index: false }));
  }
  router.use(localFontsInPages);
  return router;
}

/**
 * Bull Board renders its page with `res.render(view, locals)` (its ExpressAdapter); the HTML is rewritten before it is
 * sent. The render is looked up when it is called: Bull Board's own express app has set the response's prototype by
 * then, with its views.
 */
type Render = (
  this: Response,
  view: string,
  locals: object,
  done: (error: Error | null, html?: string) => void,
) => void;

const localFontsInPages: RequestHandler = (req, res, next) => {
  if (req.method !== "GET" && req.method !== "HEAD") return next();
  res.render = ((view: string, locals?: object) => {
    const render = (Object.getPrototypeOf(res) as { render: Render }).render;
    render.call(res, view, locals ?? {}, (error, html) => {
      if (error) next(error);
      else res.send(withLocalFonts(html ?? ""));
    });
  }) as Response["render"];
  next();
};
