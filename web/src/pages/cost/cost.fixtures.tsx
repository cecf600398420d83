/**
 * A small fake of the money and order endpoints for the cost-center tests: answers in the
 * contract's shapes, every call recorded so a test can assert what the page asked for.
 */
import { vi, type Mock } from 'vitest';
import type { Order, ResourceProduct, User, Voucher } from '@console/contract';
import type { ResourcePackage } from '../../api/orders';

export const json = (status: number, body: unknown) => new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } });

export const user: User = {
  id: 'u1', logo: '', certStatus: 'Init', certType: 'Uncertified', accountType: 'personal',
  createAt: '2025-01-01T00:00:00Z', credit: 0, from: 'web', mobile: '13800138000', email: '', name: '',
  nickname: '', childName: '', isStudent: false, isChild: false, certified: false, userVersion: 1,
  firstVisit: true, openModal: false, isOperator: false, createGPUInstance: false, createImageAPP: false,
  openYunBucket: false, gpu: false, app: false, image: false, usingLLM: false,
};

const inFifteenMinutes = () => new Date(Date.now() + 15 * 60_000).toISOString();

export function order(over: Partial<Order> = {}): Order {
  return {
    orderUid: 'O20261123085616aaaa0001',
    kind: 'Ai',
    type: 'NewBuy',
    category: 'Ai',
    status: 'Unpaid',
    description: '大模型 Token 包 1000 万 × 1（¥50.00）',
    amount: '500000',
    voucherDeduction: '0',
    payMethod: null,
    paid: [],
    quote: {
      lines: [{ kind: 'compute', name: '大模型 Token 包 1000 万 × 1', unitPrice: '500000', quantity: 1, amount: '500000' }],
      listTotal: '500000',
      discountTotal: '0',
      voucherDeduction: '0',
      total: '500000',
    },
    resourceId: null,
    failReason: null,
    expiresAt: inFifteenMinutes(),
    paidAt: null,
    fulfilledAt: null,
    refundedAt: null,
    createdAt: '2026-11-23T08:56:16.000Z',
    ...over,
  };
}

export const voucher: Voucher = {
  id: '0b6c1f0e-2a59-4d51-9b8e-6a3c0f2b9d11',
  name: '新用户专享代金券',
  amount: '500000',
  minSpend: '0',
  categories: [],
  status: 'Unused',
  validFrom: '2026-01-01T00:00:00Z',
  expiresAt: '2099-01-31T00:00:00Z',
};

export const products: ResourceProduct[] = [
  { id: 'llm-tokens-10m', name: '大模型 Token 包 1000 万', unit: 'tokens', quantity: '10000000', price: '500000', validDays: 365, description: '模型服务通用' },
  { id: 'gpu-hours-4090-100', name: 'RTX 4090 时长包 100 小时', unit: '卡时', quantity: '100', price: '1680000', validDays: 90, description: '按量计费优先抵扣' },
];

export const pkg: ResourcePackage = {
  id: 'p1',
  name: '大模型 Token 包 1000 万',
  unit: 'tokens',
  total: '10000000',
  remain: '2500000',
  gpuTypeId: null,
  expired: false,
  expiresAt: '2099-11-23T08:57:15.000Z',
  createdAt: '2026-11-23T08:57:15.000Z',
  orderUid: 'O20261123085616aaaa0001',
};

export type Handler = (url: URL, init?: RequestInit) => Response | undefined;

/** Stubs fetch: `extra` handlers first, then harmless defaults (empty lists, 600 yuan available). */
export function costServer(...extra: Handler[]): Mock<typeof fetch> {
  const mock = vi.fn<typeof fetch>(async (input, init) => {
    const url = new URL(String(input), 'http://localhost');
    for (const handler of extra) {
      const res = handler(url, init);
      if (res) return res;
    }
    switch (url.pathname) {
      case '/userapi/api/v2.1/users/me/info':
        return json(200, user);
      case '/billing/api/v1/user/money':
        return json(200, { cash: '5000000', gift: '1000000', voucher: '500000', deposit: '0', available: '6000000' });
      case '/order/api/v2.1/vouchers':
        return json(200, { items: [voucher] });
      case '/order/api/v2.1/orders':
        return json(200, { items: [], total: 0, page: Number(url.searchParams.get('page') ?? 1), pageSize: Number(url.searchParams.get('pageSize') ?? 10) });
      case '/shinichi/api/v2.1/tiio/resource/products':
        return json(200, { items: products });
      case '/order/api/v2.1/resource/packages':
        return json(200, { items: [] });
      case '/billing/api/v1/user/statement':
        return json(200, { items: [], total: 0, page: 1, pageSize: 10 });
      case '/billing/api/v1/invoices/invoiceable':
        return json(200, { invoiceable: '0', paidIn: '0', refunded: '0', invoiced: '0', pending: '0' });
      case '/billing/api/v1/invoices':
        return json(200, { items: [], total: 0, page: 1, pageSize: 10 });
      case '/order/api/v2.1/promotion':
        return json(200, { rechargeBonusRate: '0.18', newUserVoucher: '500000', customerServiceUrl: 'https://work.weixin.qq.com/kfid/x' });
      default:
        return json(404, { code: 40400001, message: '请求的接口不存在' });
    }
  });
  vi.stubGlobal('fetch', mock);
  return mock;
}

/** The calls made to `path` (method + URL + parsed body). */
export function callsTo(mock: Mock<typeof fetch>, path: string, method = 'GET') {
  return mock.mock.calls
    .map(([input, init]) => ({ url: new URL(String(input), 'http://localhost'), init, method: init?.method ?? 'GET' }))
    .filter((c) => c.url.pathname === path && c.method === method)
    .map((c) => ({ ...c, body: c.init?.body ? (JSON.parse(String(c.init.body)) as unknown) : undefined }));
}
