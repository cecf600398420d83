/**
 * The datasets API (/sd/dataset pages). A child account needs createGPUInstance or gpu: the SD area
 * spends the main account's money on GPUs, and a dataset is what that work starts from.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import {
  API,
  DATASET_MAX_IMAGE_BYTES,
  DATASET_MAX_IMAGES,
  datasetCaptionRequestSchema,
  datasetCaptionsRequestSchema,
  datasetCaptionsResultSchema,
  datasetCreateRequestSchema,
  datasetExportQuerySchema,
  datasetIdParamsSchema,
  datasetImageFileQuerySchema,
  datasetImageListQuerySchema,
  datasetImageParamsSchema,
  datasetImageSchema,
  datasetListQuerySchema,
  datasetSchema,
  datasetUpdateRequestSchema,
  datasetUploadResultSchema,
  okSchema,
  pageOf,
  type DatasetUploadResult,
} from '@console/contract';
import { currentSession, payerOf, type AuthGuards } from '../../http/auth.js';
import { AppError } from '../../http/errors.js';
import { sendFile } from '../../http/send-file.js';
import { DATASET_MAX_ZIP_BYTES, type DatasetService } from './service.js';
import { admitZipImport } from './zip-import.js';

const tags = ['数据集'];

export interface DatasetRoutesDeps {
  auth: AuthGuards;
  datasets: DatasetService;
}

export async function datasetRoutes(app: FastifyInstance, deps: DatasetRoutesDeps) {
  const r = app.withTypeProvider<ZodTypeProvider>();
  const onRequest = deps.auth.requirePermission('createGPUInstance', 'gpu');
  const s = deps.datasets;

  r.get(
    API.sdDatasets,
    { schema: { tags, summary: '我的数据集', querystring: datasetListQuerySchema, response: { 200: pageOf(datasetSchema) } }, onRequest },
    async (req) => s.list(payerOf(req), req.query),
  );
  r.post(
    API.sdDatasets,
    { schema: { tags, summary: '创建数据集（需实名认证，否则 40311001）', body: datasetCreateRequestSchema, response: { 200: datasetSchema } }, onRequest },
    async (req) => s.create(payerOf(req), currentSession(req).user.id, req.body),
  );
  r.get(API.sdDataset, { schema: { tags, summary: '数据集详情', params: datasetIdParamsSchema, response: { 200: datasetSchema } }, onRequest }, async (req) =>
    s.get(payerOf(req), req.params.id),
  );
  r.put(
    API.sdDataset,
    { schema: { tags, summary: '修改数据集', params: datasetIdParamsSchema, body: datasetUpdateRequestSchema, response: { 200: datasetSchema } }, onRequest },
    async (req) => s.update(payerOf(req), req.params.id, req.body),
  );
  r.delete(
    API.sdDataset,
    { schema: { tags, summary: '删除数据集及其全部图片', params: datasetIdParamsSchema, response: { 200: okSchema } }, onRequest },
    async (req) => {
      await s.remove(payerOf(req), req.params.id);
      return { ok: true as const };
    },
  );
  r.get(
    API.sdDatasetImages,
    {
      schema: {
        tags,
        summary: '数据集中的图片',
        params: datasetIdParamsSchema,
        querystring: datasetImageListQuerySchema,
        response: { 200: pageOf(datasetImageSchema) },
      },
      onRequest,
    },
    async (req) => s.images(payerOf(req), req.params.id, req.query),
  );
  r.post(
    API.sdDatasetImages,
    {
      schema: {
        tags,
        summary: `上传图片（multipart，字段 file 可多个；png/jpg/webp/bmp，每张不超过 20MB，每个数据集最多 ${DATASET_MAX_IMAGES} 张）`,
        params: datasetIdParamsSchema,
        response: { 200: datasetUploadResultSchema },
      },
      onRequest,
    },
    async (req) => upload(req, s, req.params.id),
  );
  r.put(
    API.sdDatasetImage,
    {
      schema: { tags, summary: '修改图片标注', params: datasetImageParamsSchema, body: datasetCaptionRequestSchema, response: { 200: datasetImageSchema } },
      onRequest,
    },
    async (req) => s.setCaption(payerOf(req), req.params.id, req.params.imageId, req.body.caption),
  );
  r.delete(
    API.sdDatasetImage,
    { schema: { tags, summary: '删除图片', params: datasetImageParamsSchema, response: { 200: okSchema } }, onRequest },
    async (req) => {
      await s.removeImage(payerOf(req), req.params.id, req.params.imageId);
      return { ok: true as const };
    },
  );
  r.get(
    API.sdDatasetImageFile,
    { schema: { tags, summary: '图片文件（?thumb=1 为缩略图）', params: datasetImageParamsSchema, querystring: datasetImageFileQuerySchema }, onRequest },
    async (req, reply) => {
      const file = await s.imageFile(payerOf(req), req.params.id, req.params.imageId, req.query.thumb === '1');
      return sendFile(reply, file, { cacheControl: 'private, max-age=3600' });
    },
  );
  r.post(
    API.sdDatasetCaptions,
    {
      schema: {
        tags,
        summary: '批量修改标注：逐条设置、前面加触发词、查找替换',
        params: datasetIdParamsSchema,
        body: datasetCaptionsRequestSchema,
        response: { 200: datasetCaptionsResultSchema },
      },
      onRequest,
    },
    async (req) => s.captions(payerOf(req), req.params.id, req.body),
  );
  r.post(
    API.sdDatasetImport,
    {
      schema: {
        tags,
        summary:
          '导入 zip（图片及同名 .txt 标注，不超过 200MB，解压后不超过 256MB；路径含 ..、以 / 开头或带盘符的文件逐个拒绝；每个账号同时只能导入一个，全站同时导入有上限）',
        params: datasetIdParamsSchema,
        response: { 200: datasetUploadResultSchema },
      },
      onRequest,
    },
    async (req, reply) => {
      if (!req.isMultipart()) throw new AppError('UPLOAD_MISSING', '请以 multipart/form-data 上传 file 字段');
      // Let in before the upload is read: a refused one never holds its zip in memory.
      const admission = admitZipImport(currentSession(req).user.id);
      if (!admission.ok) {
        // The connection closes after the answer: the rest of the upload is not read.
        reply.header('connection', 'close');
        throw new AppError(admission.why === 'account_busy' ? 'DATASET_IMPORT_ONGOING' : 'DATASET_IMPORT_BUSY');
      }
      try {
        const file = await req.file({ limits: { files: 1, fileSize: DATASET_MAX_ZIP_BYTES }, throwFileSizeLimit: false });
        if (!file) throw new AppError('UPLOAD_MISSING');
        const zip = await file.toBuffer();
        if (file.file.truncated) throw new AppError('DATASET_ZIP_TOO_LARGE');
        return await s.importZip(payerOf(req), req.params.id, zip);
      } finally {
        admission.leave();
      }
    },
  );
  r.get(
    API.sdDatasetExport,
    { schema: { tags, summary: '导出为 sd-scripts 目录结构的 zip', params: datasetIdParamsSchema, querystring: datasetExportQuerySchema }, onRequest },
    async (req, reply) => {
      const zip = await s.exportZip(payerOf(req), req.params.id, req.query.repeats);
      reply.header('content-type', 'application/zip');
      reply.header('content-disposition', `attachment; filename="dataset.zip"; filename*=UTF-8''${encodeURIComponent(zip.fileName)}`);
      return reply.send(zip.body);
    },
  );
}

/** Each file of the upload taken or refused on its own (the page shows which and why). */
async function upload(req: FastifyRequest, s: DatasetService, id: string): Promise<DatasetUploadResult> {
  if (!req.isMultipart()) throw new AppError('UPLOAD_MISSING', '请以 multipart/form-data 上传 file 字段');
  const result: DatasetUploadResult = { added: [], refused: [] };
  // A file over the size is cut there (not thrown), so that the files after it are still read.
  for await (const file of req.files({ limits: { files: DATASET_MAX_IMAGES, fileSize: DATASET_MAX_IMAGE_BYTES }, throwFileSizeLimit: false })) {
    try {
      const bytes = await file.toBuffer();
      if (file.file.truncated) throw new AppError('DATASET_IMAGE_TOO_LARGE');
      result.added.push(await s.addImage(payerOf(req), id, file.filename, bytes));
    } catch (e) {
      if (!(e instanceof AppError) || e.is('DATASET_NOT_FOUND')) throw e;
      result.refused.push({ name: file.filename, code: e.code, message: e.message });
    }
  }
  if (!result.added.length && !result.refused.length) throw new AppError('UPLOAD_MISSING');
  return result;
}
