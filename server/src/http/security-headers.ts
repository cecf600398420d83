/**
 * The browser-facing security headers of every response (against clickjacking and sniffing), set in one place.
 *
 * Framing: the console frames none of its own pages (JupyterLab, application links and the sandbox
 * scan page open in a tab of their own), so nothing of this origin may be framed at all — neither
 * by another origin (clickjacking of the pay dialog) nor by itself: `X-Frame-Options: DENY` and
 * `frame-ancestors 'none'` on every response, API JSON included.
 *
 * Content-Security-Policy: an HTML page gets PAGE_CSP unless its route set a policy of its own
 * (the sandbox scan page allows its one inline script by hash); anything else — JSON, scripts,
 * images — gets DATA_CSP, which lets nothing load should it ever be opened as a document.
 */
import { createHash } from 'node:crypto';
import type { FastifyInstance } from 'fastify';

/**
 * The console (Vite build: module scripts from /assets, no inline script), the Swagger UI at /docs
 * (its scripts are files too) and the server's own small pages. Styles may be inline: antd's
 * CSS-in-JS writes <style> elements. Images may be data: and blob: (QR codes, previews).
 */
export const PAGE_CSP = pageCsp();

/** Responses that are not pages. */
export const DATA_CSP = "default-src 'none'; frame-ancestors 'none'";

/** PAGE_CSP, with extra script sources for a page that carries its own inline script (give its hash, see scriptHash). */
export function pageCsp(opts: { scriptSrc?: string[] } = {}): string {
  return [
    "default-src 'self'",
    ['script-src', "'self'", ...(opts.scriptSrc ?? [])].join(' '),
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data: blob:",
    "font-src 'self' data:",
    "connect-src 'self'",
    "object-src 'none'",
    "base-uri 'self'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join('; ');
}

/** The CSP source that allows exactly this inline <script> body. */
export function scriptHash(source: string): string {
  return `'sha256-${createHash('sha256').update(source, 'utf8').digest('base64')}'`;
}

/** Adds the headers to every response of `app` (register before the routes, on the root instance). */
export function registerSecurityHeaders(app: FastifyInstance): void {
  app.addHook('onSend', async (_request, reply) => {
    reply.header('x-frame-options', 'DENY');
    reply.header('x-content-type-options', 'nosniff');
    reply.header('referrer-policy', 'strict-origin-when-cross-origin');
    if (!reply.hasHeader('content-security-policy')) {
      const type = String(reply.getHeader('content-type') ?? '');
      reply.header('content-security-policy', type.startsWith('text/html') ? PAGE_CSP : DATA_CSP);
    }
  });
}
