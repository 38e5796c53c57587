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
