import type { FastifyRequest } from 'fastify';
import { detectImage } from './image-type.js';
import { AppError } from './errors.js';

export interface UploadedImage {
  body: Buffer;
  ext: string;
  contentType: string;
}

/** The one image of a multipart upload (field `file`), recognised by its bytes and at most maxBytes long. */
export async function readUploadedImage(request: FastifyRequest, maxBytes: number): Promise<UploadedImage> {
  if (!request.isMultipart()) throw new AppError('UPLOAD_MISSING', '请以 multipart/form-data 上传 file 字段');
  const file = await request.file({ limits: { fileSize: maxBytes, files: 1 } });
  if (!file) throw new AppError('UPLOAD_MISSING');
  let body: Buffer;
  try {
    body = await file.toBuffer();
  } catch (e) {
    if ((e as { code?: string }).code === 'FST_REQ_FILE_TOO_LARGE') throw new AppError('UPLOAD_TOO_LARGE', `不能超过 ${formatBytes(maxBytes)}`);
    throw e;
  }
  const image = detectImage(body);
  if (!image) throw new AppError('UPLOAD_NOT_IMAGE');
  return { body, ...image };
}

/** Uploads only their owner and the operator may see live under this prefix; /files/* never serves it. */
export const PRIVATE_FILES = 'private/';

function formatBytes(n: number): string {
  return n >= 1024 * 1024 ? `${+(n / 1024 / 1024).toFixed(1)} MB` : `${Math.round(n / 1024)} KB`;
}
