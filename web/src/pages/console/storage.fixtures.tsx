/** My images and data disks in the contract's shapes, for the my-data page tests. */
import type { DataDisk, DiskExpansionQuote, SharedImage, UserImage } from '@console/contract';
import { ID } from './instances/instances.fixtures';

export const IMAGES = '/upgpu/api/v2.1/images';
export const DISKS = '/upgpu/api/v2.1/disks';
export const IMG = '9b1f2c3d-4e5f-4a6b-8c7d-0e1f2a3b4c5d';
export const IMG2 = '1a2b3c4d-5e6f-4a7b-9c8d-7e6f5a4b3c2d';

export function userImage(over: Partial<UserImage> = {}): UserImage {
  return {
    id: IMG,
    name: 'SD 训练环境',
    status: 'Active',
    failReason: null,
    category: 'Gpu',
    sourceInstanceId: ID,
    sourceInstanceName: '训练机-1',
    baseImageId: 'pytorch-2.3-cu121',
    baseImageName: 'PyTorch 2.3.0',
    gpuName: 'RTX 4090',
    sizeGb: 18,
    shared: false,
    sharePath: null,
    createdAt: '2026-11-23T09:00:00.000Z',
    updatedAt: '2026-11-23T09:00:06.000Z',
    ...over,
  };
}

export function sharedImage(over: Partial<SharedImage> = {}): SharedImage {
  return {
    id: IMG,
    name: 'SD 训练环境',
    category: 'Gpu',
    baseImageId: 'pytorch-2.3-cu121',
    baseImageName: 'PyTorch 2.3.0',
    gpuName: 'RTX 4090',
    sizeGb: 18,
    owner: '138****8000',
    mine: false,
    createdAt: '2026-11-23T09:00:00.000Z',
    ...over,
  };
}

export function dataDisk(over: Partial<DataDisk> = {}): DataDisk {
  return {
    instanceId: ID,
    instanceName: '训练机-1',
    category: 'Gpu',
    status: 'Stopped',
    cycle: 'Usage',
    sizeGb: 200,
    freeGb: 50,
    usedGb: 37,
    chargeableGb: 150,
    dailyPrice: '10500', // ¥1.05/天
    prepaid: false,
    expireAt: null,
    maxGb: 800,
    expandBlocked: null,
    ...over,
  };
}

export function diskQuote(over: Partial<DiskExpansionQuote> = {}): DiskExpansionQuote {
  const total = over.quote?.total ?? '5250';
  return {
    instanceId: ID,
    currentGb: 200,
    newGb: 300,
    freeGb: 50,
    maxGb: 800,
    prepaid: true,
    remainingHours: 18,
    dailyPriceAfter: '0',
    quote: {
      category: 'Gpu',
      cycle: 'Day',
      duration: 18,
      unit: '小时',
      lines: [{ kind: 'dataDisk', name: '数据盘扩容 +100 GB（200 → 300 GB，按剩余 18 小时计）', unitPrice: '70', quantity: 100, amount: total }],
      listTotal: total,
      discountTotal: '0',
      voucherDeduction: '0',
      total,
      placement: { regionId: 'bj-b' },
      discountRate: '1',
    },
    ...over,
  };
}
