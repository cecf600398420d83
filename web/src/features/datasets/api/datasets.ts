/** AI 绘图 datasets (/sd/dataset): images with captions, the input of LoRA training. */
import { queryOptions } from '@tanstack/react-query';
import { API, type Dataset, type DatasetImage, type DatasetKind, type PageOf, type datasetImageSchema, type datasetSchema } from '@console/contract';
import { BASES } from '../../../api/bases';
import { api } from '../../../api/client';

export const DATASET_KEYS = {
  all: ['datasets'] as const,
  list: (page: number, pageSize: number) => ['datasets', 'list', page, pageSize] as const,
  one: (id: string) => ['datasets', 'one', id] as const,
  images: (id: string, page: number, pageSize: number, uncaptioned: boolean) => ['datasets', 'images', id, page, pageSize, uncaptioned] as const,
};

export type DatasetFields = { name: string; kind: DatasetKind; description: string; triggerWord: string };
export type CaptionsBulk = { op: 'prefix'; text: string } | { op: 'replace'; find: string; replace: string };

const fill = (path: string, id: string, imageId = '') => path.replace(':id', id).replace(':imageId', imageId);

export const datasetApi = {
  list: (q: { page: number; pageSize: number }, signal?: AbortSignal) => api.get<PageOf<typeof datasetSchema>>(API.sdDatasets, q, { signal }),
  /** Silent: the form shows why (and the real-name dialog answers 40311001). */
  create: (body: DatasetFields) => api.post<Dataset>(API.sdDatasets, body, { successMessage: `数据集「${body.name.trim()}」已创建` }),
  get: (id: string, signal?: AbortSignal) => api.get<Dataset>(API.sdDataset, { id }, { signal }),
  update: (id: string, body: Partial<DatasetFields>) => api.put<Dataset>(API.sdDataset, { id, ...body }, { successMessage: '已保存' }),
  remove: (id: string) => api.delete<{ ok: true }>(API.sdDataset, { id }, { successMessage: '数据集已删除' }),
  images: (id: string, q: { page: number; pageSize: number; uncaptioned: boolean }, signal?: AbortSignal) =>
    api.get<PageOf<typeof datasetImageSchema>>(
      API.sdDatasetImages,
      { id, page: q.page, pageSize: q.pageSize, ...(q.uncaptioned ? { uncaptioned: 'true' } : {}) },
      { signal },
    ),
  setCaption: (id: string, imageId: string, caption: string) =>
    api.put<DatasetImage>(API.sdDatasetImage, { id, imageId, caption }, { successMessage: '标注已保存' }),
  captions: (id: string, body: CaptionsBulk) => api.post<{ changed: number }>(API.sdDatasetCaptions, { id, ...body }),
  removeImage: (id: string, imageId: string) => api.delete<{ ok: true }>(API.sdDatasetImage, { id, imageId }, { successMessage: '图片已删除' }),
  /** Plain links: the session cookie authenticates reading. */
  imageUrl: (id: string, imageId: string, thumb = false) => BASES.main.url + fill(API.sdDatasetImageFile, id, imageId) + (thumb ? '?thumb=1' : ''),
  exportUrl: (id: string, repeats: number) => `${BASES.main.url}${fill(API.sdDatasetExport, id)}?repeats=${repeats}`,
  uploadUrl: (id: string) => BASES.main.url + fill(API.sdDatasetImages, id),
  importUrl: (id: string) => BASES.main.url + fill(API.sdDatasetImport, id),
};

/** One factory per endpoint read by the pages: key and request travel together. */
export const datasetQueries = {
  list: (page: number, pageSize: number) =>
    queryOptions({ queryKey: DATASET_KEYS.list(page, pageSize), queryFn: ({ signal }) => datasetApi.list({ page, pageSize }, signal) }),
  one: (id: string) => queryOptions({ queryKey: DATASET_KEYS.one(id), queryFn: ({ signal }) => datasetApi.get(id, signal) }),
  images: (id: string, page: number, pageSize: number, uncaptioned: boolean) =>
    queryOptions({
      queryKey: DATASET_KEYS.images(id, page, pageSize, uncaptioned),
      queryFn: ({ signal }) => datasetApi.images(id, { page, pageSize, uncaptioned }, signal),
    }),
};
