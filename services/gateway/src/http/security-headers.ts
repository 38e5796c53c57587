import helmet from "helmet";
import type { RequestHandler } from "express";

/**
 * Security headers on every answer, from helmet (a maintained set of them, kept current with what browsers honour,
 * rather than a hand-written list): no framing (the queue dashboard's buttons cannot be clickjacked), no MIME sniffing,
 * no referrer, and a Content-Security-Policy that the Bull Board page still runs under: its scripts, styles, images
 * and API calls are its own (`'self'`), its inline `style` attributes need `'unsafe-inline'` for styles only, and it
 * loads its fonts from Google Fonts. Two of helmet's defaults are left to the TLS terminator in front of the gateway,
 * which serves plain HTTP itself: `upgrade-insecure-requests` would make a browser fetch the dashboard's scripts over
 * an HTTPS this process does not serve, and HSTS (with includeSubDomains) is a decision for the whole domain.
 * Swagger UI (/api-docs/) runs under this policy unchanged; only the GraphQL Sandbox page, which loads Apollo's
 * embed from its CDN, replaces it with its own (api-docs/api-docs.routes.ts).
 */
export function securityHeaders(): RequestHandler {
  return helmet({
    contentSecurityPolicy: {
      directives: {
        "default-src": ["'self'"],
        "style-src": ["'self'", "'unsafe-inline'", "https://fonts.googleapis.com"],
        "font-src": ["'self'", "data:", "https://fonts.gstatic.com"],
        "frame-ancestors": ["'none'"],
        "upgrade-insecure-requests": null,
      },
    },
    xFrameOptions: { action: "deny" },
    strictTransportSecurity: false,
  });
}
