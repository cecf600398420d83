/**
 * What the request log writes about a request. A session token may arrive as `?token=` (a page
 * opened from an embedding site), a machine origin's entry ticket as `?ticket=`: the log keeps the
 * rest of the URL and never either.
 */
import type { FastifyRequest } from 'fastify';

export function redactToken(url: string): string {
  return url.replace(/([?&](?:token|ticket)=)[^&#]*/gi, '$1[已隐去]');
}

export const LOG_SERIALIZERS = {
  req: (req: FastifyRequest) => ({ method: req.method, url: redactToken(req.url), host: req.host, remoteAddress: req.ip }),
};
