/**
 * A small fake of the instance endpoints for the console tests: answers in the contract's shapes,
 * on top of the cost-center defaults (me/info, money…), every call recorded.
 */
import { allowedActions, allowedTasks, type Instance, type InstanceOperation } from '@console/contract';
import { costServer, json, type Handler } from '../../cost/cost.fixtures';

export const ID = '6f1c7a52-3b0e-4d8a-9c1e-2a4b5c6d7e8f';
export const ID2 = '0a2b4c6d-8e0f-4a1b-9c2d-3e4f5a6b7c8d';

export const INSTANCES = '/upgpu/api/v2.1/instances';
export const LOGS = '/api/v1/operation/logs';
export const actionPath = (id: string, action: string) => `${INSTANCES}/${id}/${action}`;

export function instance(over: Partial<Instance> = {}): Instance {
  const status = over.status ?? 'Running';
  const category = over.category ?? 'Gpu';
  return {
    id: ID,
    name: '训练机-1',
    category,
    status,
    lastError: null,
    noCard: false,
    regionId: 'bj-b',
    regionName: '北京 B 区',
    roomId: 'bj-b-1',
    hostId: 'h1',
    hostName: 'BJ-B-1-A01',
    gpuTypeId: 'rtx4090',
    gpuName: 'RTX 4090',
    gpuCount: 2,
    sizeId: null,
    spec: '32 核 / 120 GB',
    imageId: 'pytorch-2.3',
    imageName: 'PyTorch 2.3.0',
    applicationId: null,
    applicationName: null,
    dataDiskGb: 100,
    freeDataDiskGb: 50,
    bandwidthMbps: 0,
    includedBandwidthMbps: 0,
    bandwidthChoices: [],
    cycle: 'Usage',
    hourlyPrice: '39600', // ¥3.96/小时
    noCardHourlyPrice: '1000', // ¥0.10/小时
    diskDailyPrice: '3500', // ¥0.35/天
    expireAt: null,
    autoRenew: false,
    releaseAt: null,
    access: {
      sshHost: 'bj-b.gpu.example.com',
      sshPort: 30022,
      sshUser: 'root',
      sshPassword: 'Pw0rd-abc123',
      sshCommand: 'ssh -p 30022 root@bj-b.gpu.example.com',
      jupyterUrl: 'https://bj-b.gpu.example.com/jupyter/6f1c7a52',
      appUrl: null,
    },
    actions: allowedActions(status),
    // As the server answers: only an e-commerce machine offers a bandwidth change.
    tasks: allowedTasks(status).filter((t) => t !== 'changeBandwidth' || category === 'Ebusiness'),
    userImageId: null,
    userImageName: null,
    orderUid: 'O20261123085616aaaa0009',
    createdAt: '2026-11-23T08:56:16.000Z',
    startedAt: '2026-11-23T09:00:00.000Z',
    stoppedAt: null,
    ...over,
  };
}

export function operation(over: Partial<InstanceOperation> = {}): InstanceOperation {
  return {
    id: 'op1',
    instanceId: ID,
    instanceName: '训练机-1',
    category: 'Gpu',
    action: 'stop',
    actionLabel: '关机',
    actorId: 'u1',
    actorName: '13800138000',
    fromStatus: 'Running',
    toStatus: 'Stopping',
    detail: '',
    createdAt: '2026-11-23T10:00:00.000Z',
    ...over,
  };
}

export const page = <T,>(items: T[], url: URL, total = items.length) => ({
  items,
  total,
  page: Number(url.searchParams.get('page') ?? 1),
  pageSize: Number(url.searchParams.get('pageSize') ?? 10),
});

/** Defaults: no instances, no operations, and 404 for an unknown instance. */
const instanceDefaults: Handler = (url) => {
  if (url.pathname === INSTANCES || url.pathname === LOGS) return json(200, page([], url));
  if (url.pathname.startsWith(`${INSTANCES}/`)) return json(404, { code: 40400004, message: '记录不存在或无权查看' });
  return undefined;
};

export function instanceServer(...extra: Handler[]) {
  return costServer(...extra, instanceDefaults);
}

/** Answers every list request with `items` (whatever the filter). */
export const listOf =
  (items: () => Instance[]): Handler =>
  (url) =>
    url.pathname === INSTANCES ? json(200, page(items(), url)) : undefined;
