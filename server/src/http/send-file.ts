import type { FastifyReply } from 'fastify';
import type { StoredObject } from '../drivers/storage/types.js';

export type StoredFile = StoredObject;

/**
 * Downloads from this size up are answered with a 302 to a signed URL of the object store when the
 * driver has one (s3): a LoRA file (tens to hundreds of MB) then comes from the store at its speed,
 * instead of holding a replica's connection and memory for the whole transfer (and being cut when
 * that replica is stopped). Smaller files are streamed through the console as before: one round trip,
 * one origin. Only downloads (attachment) are redirected: an inline image must stay on the console's
 * origin (CSP img-src 'self').
 */
export const SIGNED_DOWNLOAD_MIN_BYTES = 8 * 1024 * 1024;
/** Long enough for a browser to follow the redirect (and a slow link to start), short enough that a leaked link soon dies. */
export const SIGNED_DOWNLOAD_SECONDS = 300;

/**
 * Answers with a stored file: its type (never sniffed, so an upload cannot become a page), its size and
 * how long it may be cached; `attachment`, the file name as it goes between the quotes, makes it a download.
 * The caller has checked access: a large download's signed URL goes only to whoever reached this.
 */
export async function sendFile(reply: FastifyReply, file: StoredFile, o: { cacheControl: string; attachment?: string }): Promise<FastifyReply> {
  const disposition = o.attachment !== undefined ? `attachment; filename="${o.attachment}"` : undefined;
  if (disposition && file.signedUrl && file.size >= SIGNED_DOWNLOAD_MIN_BYTES) {
    // Not read here: the store's connection is closed before anything more of it arrives.
    file.body.destroy();
    const url = await file.signedUrl({ expiresInSeconds: SIGNED_DOWNLOAD_SECONDS, contentType: file.contentType, contentDisposition: disposition });
    // The link expires: neither the browser nor a proxy may keep the redirect.
    return reply.header('cache-control', 'private, no-store').redirect(url, 302);
  }
  reply.header('content-type', file.contentType);
  reply.header('content-length', file.size);
  reply.header('x-content-type-options', 'nosniff');
  reply.header('cache-control', o.cacheControl);
  if (disposition) reply.header('content-disposition', disposition);
  return reply.send(file.body);
}
