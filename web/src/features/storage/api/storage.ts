/** My data (spec §2 /console/gpudata): my images, the share page, data disks and their expansion. */
import { queryOptions } from '@tanstack/react-query';
import {
  API,
  type DataDiskPage,
  type DeleteImageResponse,
  type DiskExpansionQuote,
  type ReceivedImage,
  type ReceivedImageList,
  type ExpandDiskResponse,
  type SharedImage,
  type UserImage,
  type UserImagePage,
} from '@console/contract';
import { api } from '../../../api/client';

/** Query keys: a change to an image refreshes `images`; an expansion refreshes `disks` (and the instances). */
export const STORAGE_KEYS = {
  images: ['userImages'] as const,
  imageList: (page: number, pageSize: number) => ['userImages', 'list', page, pageSize] as const,
  shared: (id: string) => ['userImages', 'shared', id] as const,
  received: ['userImages', 'received'] as const,
  detail: (id: string) => ['userImages', 'detail', id] as const,
  disks: ['dataDisks'] as const,
  diskList: (page: number, pageSize: number) => ['dataDisks', 'list', page, pageSize] as const,
  diskPrice: (id: string, gb: number) => ['dataDisks', 'price', id, gb] as const,
};

export const storageApi = {
  images: (q: { page: number; pageSize: number }, signal?: AbortSignal) => api.get<UserImagePage>(API.userImages, q, { signal }),
  /** The first image and the account's count and limit, without a toast when it fails (a child without the data permission). */
  imagesQuiet: (signal?: AbortSignal) => api.get<UserImagePage>(API.userImages, { page: 1, pageSize: 1 }, { signal, silent: true }),
  image: (id: string, signal?: AbortSignal) => api.get<UserImage>(API.userImage, { id }, { signal }),
  /** Silent: the save dialog shows why (name taken, limit reached, not stopped) under its field. */
  saveImage: (instanceId: string, name: string) => api.post<UserImage>(API.instanceImage, { id: instanceId, name }, { silent: true }),
  renameImage: (id: string, name: string) => api.put<UserImage>(API.userImageName, { id, name }, { successMessage: '镜像名称已修改' }),
  shareImage: (id: string, shared: boolean) =>
    api.put<UserImage>(API.userImageShare, { id, shared }, { successMessage: shared ? '已开启分享链接' : '已关闭分享链接' }),
  /** The page tells what the host did with the image (the answer's message). */
  deleteImage: (id: string) => api.delete<DeleteImageResponse>(API.userImage, { id }),
  createShareCode: (id: string) => api.post<UserImage>(API.userImageShareCode, { id }, { successMessage: '共享码已生成' }),
  revokeShareCode: (id: string) => api.delete<UserImage>(API.userImageShareCode, { id }, { successMessage: '共享码已撤销，已添加的账号不能再使用该镜像' }),
  received: (signal?: AbortSignal) => api.get<ReceivedImageList>(API.receivedImages, undefined, { signal }),
  /** Silent: the code's field shows why it was refused. */
  redeem: (code: string) => api.post<ReceivedImage>(API.receivedImages, { code }, { silent: true }),
  dropReceived: (id: string) => api.delete<{ ok: true }>(API.receivedImage, { id }, { successMessage: '已从列表移除' }),
  /** Silent: the share page says "not shared" itself. */
  shared: (id: string, signal?: AbortSignal) => api.get<SharedImage>(API.sharedImage, { id }, { signal, silent: true }),
  disks: (q: { page: number; pageSize: number }, signal?: AbortSignal) => api.get<DataDiskPage>(API.dataDisks, q, { signal }),
  /** Silent: the expansion dialog shows why it has no quote. */
  diskPrice: (instanceId: string, dataDiskGb: number, signal?: AbortSignal) =>
    api.post<DiskExpansionQuote>(API.instanceDiskPrice, { id: instanceId, dataDiskGb }, { signal, silent: true }),
  expandDisk: (instanceId: string, dataDiskGb: number) => api.post<ExpandDiskResponse>(API.instanceDisk, { id: instanceId, dataDiskGb }),
};

/** The share link as a user copies it: this console's origin and the share page. */
export function shareUrl(sharePath: string): string {
  return `${window.location.origin}${sharePath}`;
}

/** One factory per endpoint read by the pages and dialogs: key and request travel together. */
export const storageQueries = {
  /** Only the totals of the image list (its quota), quietly: a child without 数据 simply does not see it. */
  imageQuota: () => queryOptions({ queryKey: STORAGE_KEYS.imageList(1, 1), queryFn: ({ signal }) => storageApi.imagesQuiet(signal) }),
  shared: (id: string) => queryOptions({ queryKey: STORAGE_KEYS.shared(id), queryFn: ({ signal }) => storageApi.shared(id, signal) }),
  detail: (id: string) => queryOptions({ queryKey: STORAGE_KEYS.detail(id), queryFn: ({ signal }) => storageApi.image(id, signal) }),
  received: () => queryOptions({ queryKey: STORAGE_KEYS.received, queryFn: ({ signal }) => storageApi.received(signal) }),
  diskPrice: (instanceId: string, gb: number) =>
    queryOptions({ queryKey: STORAGE_KEYS.diskPrice(instanceId, gb), queryFn: ({ signal }) => storageApi.diskPrice(instanceId, gb, signal) }),
};
