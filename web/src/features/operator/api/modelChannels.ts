import { queryOptions } from '@tanstack/react-query';
import { API, type ModelChannelSaveRequest, type OperatorModelChannels, type OperatorModelUpdate } from '@console/contract';
import { api } from '../../../api/client';
import { OPERATOR_KEYS } from '../../account';

/** Under the operator area's keys: everything it reads is refreshed together. */
export const MODEL_CHANNEL_KEYS = { all: [...OPERATOR_KEYS.all, 'model-channels'] as const };

/** 「模型渠道」: every edit answers the whole list again (with live health), which replaces the cached one. */
export const modelChannelsApi = {
  list: (signal?: AbortSignal) => api.get<OperatorModelChannels>(API.operatorModelChannels, undefined, { signal }),
  saveChannel: (id: string, body: ModelChannelSaveRequest, successMessage: string) =>
    api.put<OperatorModelChannels>(API.operatorModelChannel, { id, ...body }, { successMessage }),
  deleteChannel: (id: string) => api.delete<OperatorModelChannels>(API.operatorModelChannel, { id }, { successMessage: '渠道已删除' }),
  updateModel: (id: string, body: OperatorModelUpdate, successMessage: string) =>
    api.put<OperatorModelChannels>(API.operatorModel, { id, ...body }, { successMessage }),
};

export const modelChannelQueries = {
  all: () => queryOptions({ queryKey: MODEL_CHANNEL_KEYS.all, queryFn: ({ signal }) => modelChannelsApi.list(signal) }),
};
