import type { FastifyRequest } from 'fastify';

export function clientMeta(request: FastifyRequest) {
  return { ip: request.ip, userAgent: String(request.headers['user-agent'] ?? '') };
}
