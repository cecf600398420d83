/**
 * A small fake catalogue server for the page tests: the answers have the contract's shapes, and
 * every call is recorded so a test can assert what the page asked for.
 */
import { render } from '@testing-library/react';
import { QueryClient } from '@tanstack/react-query';
import { createMemoryRouter, RouterProvider } from 'react-router';
import { vi, type Mock } from 'vitest';
import type { CyclePrice, GpuHost, GpuType, Image, Quote, Region } from '@console/contract';
import { AppProviders } from '../../app/AppProviders';
import { createRoutes } from '../../routes';

export const json = (status: number, body: unknown) => new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } });

const price = (cycle: CyclePrice['cycle'], list: number, rate = '1'): CyclePrice => ({
  cycle,
  listPrice: String(list),
  price: String(Math.round(list * Number(rate))),
  discountRate: rate,
});
export const rtxPrices: CyclePrice[] = [price('Hour', 19800), price('Day', 475200, '0.95'), price('Week', 3326400, '0.85'), price('Month', 14256000, '0.7')];

export const regions: Region[] = [
  {
    id: 'bj-b',
    name: '北京 B 区',
    area: '华北',
    gpuFree: 12,
    categories: ['Gpu', 'App', 'Generic'],
    rooms: [
      { id: 'bj-b-1', regionId: 'bj-b', regionName: '北京 B 区', name: '北京 B 区 1 号机房', zones: ['A'], isDefault: true },
      { id: 'bj-b-2', regionId: 'bj-b', regionName: '北京 B 区', name: '北京 B 区 2 号机房', zones: ['A'], isDefault: false },
    ],
  },
  { id: 'sh-a', name: '上海 A 区', area: '华东', gpuFree: 3, categories: ['Gpu'], rooms: [{ id: 'sh-a-1', regionId: 'sh-a', regionName: '上海 A 区', name: '上海 A 区 1 号机房', zones: ['A'], isDefault: true }] },
];

export const gpuTypes: GpuType[] = [
  { id: 'rtx4090', name: 'RTX 4090', memoryGb: 24, architecture: 'Ada Lovelace', cudaCapability: '8.9', fp32Tflops: 82.6, description: '', prices: rtxPrices, gpuFree: 12, gpuTotal: 16 },
  { id: 'a100', name: 'A100 80GB', memoryGb: 80, architecture: 'Ampere', cudaCapability: '8.0', fp32Tflops: 19.5, description: '', prices: rtxPrices, gpuFree: 0, gpuTotal: 8 },
];

export function host(over: Partial<GpuHost> = {}): GpuHost {
  return {
    id: 'h1',
    name: 'BJ-B-1-A01',
    regionId: 'bj-b',
    regionName: '北京 B 区',
    roomId: 'bj-b-1',
    roomName: '北京 B 区 1 号机房',
    zone: 'A',
    gpuTypeId: 'rtx4090',
    gpuName: 'RTX 4090',
    gpuMemoryGb: 24,
    gpuTotal: 8,
    gpuFree: 5,
    cpuModel: 'Intel Xeon',
    cpuPerGpu: 16,
    memoryGbPerGpu: 60,
    systemDiskGb: 30,
    dataDiskFreeGb: 50,
    dataDiskMaxGb: 800,
    maxCuda: '12.4',
    prices: rtxPrices,
    price: rtxPrices[0]!,
    ...over,
  };
}

export const images: Image[] = [
  { id: 'pytorch-2.3', kind: 'framework', name: 'PyTorch 2.3.0', os: 'Ubuntu 22.04', framework: 'PyTorch', frameworkVersion: '2.3.0', cuda: '12.1', python: '3.10', forGpu: true, forCategories: ['Gpu'], description: '' },
];

/** A quote for `cycle`: 1 card of RTX 4090 for one unit, at the fixture's prices. */
export function quoteFor(cycle: 'Hour' | 'Day', duration = 1): Quote {
  const p = rtxPrices.find((x) => x.cycle === cycle)!;
  const list = BigInt(p.listPrice) * BigInt(duration);
  const net = BigInt(p.price) * BigInt(duration);
  const unit = cycle === 'Hour' ? '小时' : '天';
  return {
    category: 'Gpu',
    cycle,
    duration,
    unit,
    lines: [
      { kind: 'compute', name: `RTX 4090 × 1（${duration} ${unit}）`, unitPrice: p.listPrice, quantity: duration, amount: String(list) },
      ...(list > net ? [{ kind: 'cycleDiscount' as const, name: `${unit}付优惠（0.95）`, unitPrice: String(net - list), quantity: 1, amount: String(net - list) }] : []),
    ],
    listTotal: String(list),
    discountTotal: String(list - net),
    voucherDeduction: '0',
    total: String(net),
    placement: { regionId: 'bj-b', roomId: 'bj-b-1', hostId: 'h1' },
    discountRate: p.discountRate,
  };
}

export type Handler = (url: URL, init?: RequestInit) => Response | undefined;

/** The default answers of the catalogue endpoints; `extra` handlers are asked first. */
export function catalogueServer(...extra: Handler[]): Mock<typeof fetch> {
  const mock = vi.fn<typeof fetch>(async (input, init) => {
    const url = new URL(String(input), 'http://localhost');
    for (const handler of extra) {
      const res = handler(url, init);
      if (res) return res;
    }
    switch (url.pathname) {
      case '/infra/api/v2.1/regions':
        return json(200, { items: regions });
      case '/upgpu/api/v2.1/gpu_type/list':
        return json(200, { items: gpuTypes });
      case '/upgpu/api/v2.1/gpu/available_gpu_types':
        return json(200, { items: gpuTypes.map((t) => ({ ...t, maxGpuPerHost: t.gpuFree > 0 ? 5 : 0 })) });
      case '/upgpu/api/v2.1/gpu/list': {
        const cycle = url.searchParams.get('cycle') ?? 'Hour';
        return json(200, { items: [host({ price: rtxPrices.find((p) => p.cycle === cycle) ?? rtxPrices[0]! })], total: 1, page: 1, pageSize: 24 });
      }
      case '/upgpu/api/v2.1/gpu/images':
        return json(200, { items: images });
      case '/infra/api/v2.1/region/recommend':
        return json(200, { regionId: 'bj-b', regionName: '北京 B 区', reason: '' });
      case '/infra/api/v2.1/gpu/order/price': {
        const body = JSON.parse(String(init?.body)) as { cycle: 'Hour' | 'Day'; duration: number };
        return json(200, quoteFor(body.cycle, body.duration));
      }
      default:
        return json(404, { code: 40400001, message: '请求的接口不存在' });
    }
  });
  vi.stubGlobal('fetch', mock);
  return mock;
}

/** The URLs (path + query) the page fetched under `path`. */
export function calls(mock: Mock<typeof fetch>, path: string): URL[] {
  return mock.mock.calls.map(([input]) => new URL(String(input), 'http://localhost')).filter((u) => u.pathname === path);
}

/** Mounts the whole app at `url`, as main.tsx does, on a memory router. */
export function renderApp(url: string) {
  const router = createMemoryRouter(createRoutes(), { initialEntries: [url] });
  render(
    <AppProviders queryClient={new QueryClient({ defaultOptions: { queries: { retry: false } } })}>
      <RouterProvider router={router} />
    </AppProviders>,
  );
  return router;
}
