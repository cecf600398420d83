import type { Readable } from 'node:stream';
import type { FastifyReply } from 'fastify';

export interface StoredFile {
  body: Readable;
  size: number;
  contentType: string;
}

/**
 * Answers with a stored file: its type (never sniffed, so an upload cannot become a page), its size and
 * how long it may be cached; `attachment`, the file name as it goes between the quotes, makes it a download.
 */
export function sendFile(reply: FastifyReply, file: StoredFile, o: { cacheControl: string; attachment?: string }): FastifyReply {
  reply.header('content-type', file.contentType);
  reply.header('content-length', file.size);
  reply.header('x-content-type-options', 'nosniff');
  reply.header('cache-control', o.cacheControl);
  if (o.attachment !== undefined) reply.header('content-disposition', `attachment; filename="${o.attachment}"`);
  return reply.send(file.body);
}
