import helmet from "helmet";
import type { RequestHandler } from "express";

/**
 * Security headers on every answer, from helmet (a maintained set of them, kept current with what browsers honour,
 * rather than a hand-written list): no framing (the queue dashboard's buttons cannot be clickjacked), no MIME sniffing,
 * no referrer, and a Content-Security-Policy under which every page the gateway serves (Bull Board, Swagger UI,
 * GraphiQL) loads from the gateway alone: scripts, styles, fonts, images and requests are `'self'`; fonts and images
 * may also be `data:` URLs inside those files (GraphiQL's fonts, Swagger UI's icons); Bull Board's inline `style`
 * attributes need `'unsafe-inline'` for styles only. No other origin: a page that reached for one would fail where
 * the network has no way out, so the browser refuses it here too. Two of helmet's defaults are left to the TLS
 * terminator in front of the gateway, which serves plain HTTP itself: `upgrade-insecure-requests` would make a browser
 * fetch the dashboard's scripts over an HTTPS this process does not serve, and HSTS (with includeSubDomains) is a
 * decision for the whole domain.
 */
export function securityHeaders(): RequestHandler {
  const headers = staticHeadersOf(helmetMiddleware());
  // helmet runs a dozen middleware per request, each setting one header whose value never changes: the same headers
  // are taken from it once and set in one loop (about 3% of the gateway's CPU on a GraphQL `me`).
  return (_req, res, next) => {
    for (let i = 0; i < headers.length; i += 2) res.setHeader(headers[i]!, headers[i + 1]!);
    next();
  };
}

/**
 * The headers `middleware` sets, as [name, value, name, value…], from one run against a stand-in response. Refuses a
 * middleware whose headers could vary per request (one reading the request, or removing or appending headers).
 */
function staticHeadersOf(middleware: RequestHandler): string[] {
  const headers: string[] = [];
  const unexpected = (what: string) => () => {
    throw new Error(`security headers: helmet ${what}, so its headers cannot be computed once`);
  };
  const req = new Proxy({}, { get: unexpected("read the request") });
  const res = {
    setHeader: (name: string, value: string | number | readonly string[]) => {
      if (typeof value !== "string") unexpected(`set ${name} to a non-string`)();
      headers.push(name, value as string);
    },
    // helmet drops X-Powered-By, which express never sets here (app.disable("x-powered-by"))
    removeHeader: () => {},
  };
  let called = false;
  middleware(req as never, res as never, () => {
    called = true;
  });
  if (!called) unexpected("did not call next synchronously")();
  return headers;
}

function helmetMiddleware(): RequestHandler {
  return helmet({
    contentSecurityPolicy: {
      directives: {
        "default-src": ["'self'"],
        "style-src": ["'self'", "'unsafe-inline'"],
        "font-src": ["'self'", "data:"],
        "frame-ancestors": ["'none'"],
        "upgrade-insecure-requests": null,
      },
    },
    xFrameOptions: { action: "deny" },
    strictTransportSecurity: false,
  });
}
