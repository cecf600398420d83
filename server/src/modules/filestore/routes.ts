/** 文件存储's API (我的数据 → 文件存储): the payer's tree; a child needs openYunBucket or image, as for my data. */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import {
  API,
  fileStoreEntrySchema,
  fileStoreFolderRequestSchema,
  fileStoreListingSchema,
  fileStoreNameSchema,
  fileStorePathQuerySchema,
  fileStoreRenameRequestSchema,
} from '@console/contract';
import { payerOf, type AuthGuards } from '../../http/auth.js';
import { AppError } from '../../http/errors.js';
import type { FileStore } from './store.js';

const tags = ['文件存储'];
const ok = z.object({ ok: z.literal(true) });

export interface FileStoreRoutesDeps {
  auth: AuthGuards;
  /** null where the machines mount none (the routes say it is unavailable). */
  fileStore: FileStore | null;
}

export async function fileStoreRoutes(app: FastifyInstance, { auth, fileStore }: FileStoreRoutesDeps) {
  const r = app.withTypeProvider<ZodTypeProvider>();
  const onRequest = auth.requireAuth;
  const preHandler = auth.requirePermission('openYunBucket', 'image');
  const store = (): FileStore => {
    if (!fileStore) throw new AppError('FILESTORE_UNAVAILABLE');
    return fileStore;
  };

  r.get(
    API.fileStore,
    { schema: { tags, summary: '列出文件夹', querystring: fileStorePathQuerySchema, response: { 200: fileStoreListingSchema } }, onRequest, preHandler },
    async (req) => store().list(payerOf(req), req.query.path),
  );
  r.post(
    API.fileStoreFolder,
    { schema: { tags, summary: '新建文件夹', body: fileStoreFolderRequestSchema, response: { 200: ok } }, onRequest, preHandler },
    async (req) => {
      await store().makeFolder(payerOf(req), req.body.parent, req.body.name);
      return { ok: true as const };
    },
  );
  r.post(
    API.fileStoreRename,
    { schema: { tags, summary: '重命名', body: fileStoreRenameRequestSchema, response: { 200: ok } }, onRequest, preHandler },
    async (req) => {
      await store().rename(payerOf(req), req.body.path, req.body.name);
      return { ok: true as const };
    },
  );
  r.delete(
    API.fileStore,
    { schema: { tags, summary: '删除文件或文件夹', querystring: fileStorePathQuerySchema, response: { 200: ok } }, onRequest, preHandler },
    async (req) => {
      await store().remove(payerOf(req), req.query.path);
      return { ok: true as const };
    },
  );
  r.post(
    API.fileStoreUpload,
    {
      schema: { tags, summary: '上传文件（multipart，字段 file）', querystring: fileStorePathQuerySchema, response: { 200: fileStoreEntrySchema } },
      onRequest,
      preHandler,
    },
    async (req) => upload(req, store(), req.query.path),
  );
  r.get(API.fileStoreDownload, { schema: { tags, summary: '下载文件', querystring: fileStorePathQuerySchema }, onRequest, preHandler }, async (req, reply) => {
    const stream = await store().read(payerOf(req), req.query.path);
    const name = req.query.path.split('/').pop() || 'file';
    reply.header('content-type', 'application/octet-stream');
    reply.header('content-disposition', `attachment; filename="${name.replace(/[^\x20-\x7e]|"/g, '_')}"; filename*=UTF-8''${encodeURIComponent(name)}`);
    return reply.send(stream);
  });
}

async function upload(req: FastifyRequest, store: FileStore, folder: string) {
  if (!req.isMultipart()) throw new AppError('UPLOAD_MISSING', '请以 multipart/form-data 上传 file 字段');
  const file = await req.file({ limits: { files: 1, fileSize: store.quotaBytes } });
  if (!file) throw new AppError('UPLOAD_MISSING');
  const name = fileStoreNameSchema.safeParse(file.filename);
  if (!name.success) {
    file.file.resume();
    throw new AppError('VALIDATION_FAILED', `文件名：${name.error.issues[0]!.message}`);
  }
  const size = await store.write(payerOf(req), folder, name.data, file.file);
  return { name: name.data, path: `${folder === '/' ? '' : folder}/${name.data}`, dir: false, size, modifiedAt: new Date().toISOString() };
}
