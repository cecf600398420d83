/** 文件存储 (我的数据 → 文件存储): the account's file tree, also at /root/shared in its instances. */
import { queryOptions } from '@tanstack/react-query';
import { API, type FileStoreListing } from '@console/contract';
import { BASES } from '../../../api/bases';
import { api } from '../../../api/client';

export const FILESTORE_KEYS = {
  all: ['fileStore'] as const,
  folder: (path: string) => ['fileStore', path] as const,
};

const withPath = (url: string, path: string) => `${url}?${new URLSearchParams({ path })}`;

export const fileStoreApi = {
  /** Silent: the page shows why it has no listing (not offered here, a folder that is gone). */
  list: (path: string, signal?: AbortSignal) => api.get<FileStoreListing>(API.fileStore, { path }, { signal, silent: true }),
  makeFolder: (parent: string, name: string) => api.post<{ ok: true }>(API.fileStoreFolder, { parent, name }, { successMessage: `已新建文件夹「${name}」` }),
  rename: (path: string, name: string) => api.post<{ ok: true }>(API.fileStoreRename, { path, name }, { successMessage: '已重命名' }),
  remove: (path: string) => api.delete<{ ok: true }>(withPath(API.fileStore, path), undefined, { successMessage: '已删除' }),
  /** A plain link: the session cookie authenticates the download. */
  downloadUrl: (path: string) => BASES.main.url + withPath(API.fileStoreDownload, path),
  uploadUrl: (folder: string) => BASES.main.url + withPath(API.fileStoreUpload, folder),
};

export const fileStoreQueries = {
  folder: (path: string) => queryOptions({ queryKey: FILESTORE_KEYS.folder(path), queryFn: ({ signal }) => fileStoreApi.list(path, signal) }),
};
