import { queryOptions } from '@tanstack/react-query';
import { API, type OperatorImage, type OperatorImageList, type OperatorImageRegister } from '@console/contract';
import { api } from '../../../api/client';
import { OPERATOR_KEYS } from '../../account';

export const REGISTERED_IMAGE_KEYS = { all: [...OPERATOR_KEYS.all, 'registered-images'] as const };

/** 镜像登记: register by reference (checked on the server before it is recorded), list, remove. */
export const registeredImagesApi = {
  list: (signal?: AbortSignal) => api.get<OperatorImageList>(API.operatorImages, undefined, { signal }),
  register: (body: OperatorImageRegister) => api.post<OperatorImage>(API.operatorImages, body, { successMessage: `镜像「${body.name}」已登记` }),
  remove: (image: OperatorImage) => api.delete<{ ok: true }>(API.operatorImage, { id: image.id }, { successMessage: `已移除「${image.name}」` }),
};

export const registeredImageQueries = {
  all: () => queryOptions({ queryKey: REGISTERED_IMAGE_KEYS.all, queryFn: ({ signal }) => registeredImagesApi.list(signal) }),
};
