import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { fireEvent, screen, waitFor, within } from '@testing-library/react';
import type { Application, Size } from '@console/contract';
import { session } from '../../../session/store';
import { calls, json } from '../../../test/http';
import { renderApp } from '../../../test/render';
import { catalogueServer } from '../../../test/fixtures/catalogue';

const APPS = '/upgpu/api/v2.1/application/list';
const app: Application = {
  id: 'sd-webui',
  name: 'Stable Diffusion WebUI',
  category: 'AI 绘画',
  description: '文生图',
  cover: '/covers/sd.svg',
  defaultPort: 7860,
  imageId: 'pytorch-2.3',
  minGpuMemoryGb: 8,
  tags: ['ControlNet'],
};

beforeEach(() => session.reload());
afterEach(() => vi.unstubAllGlobals());

describe('the image applications gallery', () => {
  it('shows each app, falls back to its initial when the cover fails, and deploys to the purchase page', async () => {
    catalogueServer((url) =>
      url.pathname === APPS ? json(200, { items: [app], total: 1, page: 1, pageSize: 12, categories: ['AI 绘画', '大模型'] }) : undefined,
    );
    const router = renderApp('/stats/cloud/apply');
    const card = await screen.findByRole('article', { name: 'Stable Diffusion WebUI' });
    expect(within(card).getByText('显存 ≥ 8 GB')).toBeTruthy();
    expect(within(card).getByText('默认端口 7860')).toBeTruthy();
    fireEvent.error(within(card).getByRole('img'));
    expect(within(card).getByText('S')).toBeTruthy();

    fireEvent.click(within(card).getByRole('button', { name: '立即部署' }));
    await waitFor(() => expect(router.state.location.pathname + router.state.location.search).toBe('/stats/purchase?applicationId=sd-webui'));
  });

  it('an app that needs no card shows the CPU sizes it is sold on, with their price, and deploys to the CPU configurator', async () => {
    const size = (id: string, cpu: number, memoryGb: number, hourly: string, unavailable?: string): Size => ({
      id,
      category: 'Generic',
      name: `通用型 ${cpu} 核 ${memoryGb} GB`,
      cpu,
      memoryGb,
      systemDiskGb: 40,
      bandwidthMbps: 5,
      gpuName: '',
      regionIds: ['bj-b'],
      description: '',
      prices: [{ cycle: 'Hour', listPrice: hourly, price: hourly, discountRate: '1' }],
      price: { cycle: 'Hour', listPrice: hourly, price: hourly, discountRate: '1' },
      ...(unavailable ? { unavailable } : {}),
    });
    const notebook: Application = {
      ...app,
      id: 'jupyter-notebook',
      name: 'Jupyter Notebook · 数据分析',
      category: '数据科学',
      defaultPort: 8888,
      minGpuMemoryGb: 0,
      sizes: [
        size('gen-c2m4', 2, 4, '1200'),
        size('gen-c4m8', 4, 8, '2400'),
        size('gen-c8m16', 8, 16, '4800', '本主机只有 4 核 / 8 GB 内存，放不下 8 核 / 16 GB 的机器'),
      ],
    };
    catalogueServer((url) =>
      url.pathname === APPS ? json(200, { items: [app, notebook], total: 2, page: 1, pageSize: 12, categories: ['AI 绘画', '数据科学'] }) : undefined,
    );
    const router = renderApp('/stats/cloud/apply');
    const card = await screen.findByRole('article', { name: 'Jupyter Notebook · 数据分析' });
    expect(within(card).getByText('无需 GPU')).toBeTruthy();
    const sizes = within(card).getByRole('list', { name: 'Jupyter Notebook · 数据分析 可选 CPU 规格' });
    const rows = within(sizes)
      .getAllByRole('listitem')
      .map((li) => li.textContent);
    // Only the sizes on sale, each at its own hourly price.
    expect(rows).toEqual(['CPU 2 核 · 4 GB¥0.12/小时', 'CPU 4 核 · 8 GB¥0.24/小时']);
    // A GPU app shows no CPU sizes.
    const gpuCard = screen.getByRole('article', { name: 'Stable Diffusion WebUI' });
    expect(within(gpuCard).queryByRole('list')).toBeNull();

    fireEvent.click(within(card).getByRole('button', { name: '立即部署' }));
    await waitFor(() =>
      expect(router.state.location.pathname + router.state.location.search).toBe('/stats/purchase?applicationId=jupyter-notebook&category=Generic'),
    );
  });

  it('on a market of one real host: says what the host has, and an app whose image is missing says so and cannot be deployed', async () => {
    const host = {
      cpus: 2,
      memoryGb: 4,
      diskGb: 50,
      gpus: [],
      os: 'Debian GNU/Linux 12 (bookworm)',
      cpuForSale: 2,
      memoryGbForSale: 4,
      cpuFree: 2,
      memoryGbFree: 4,
    };
    const missing: Application = { ...app, unavailable: '运营方尚未登记该应用的镜像' };
    catalogueServer((url) => {
      if (url.pathname === APPS) return json(200, { items: [missing], total: 1, page: 1, pageSize: 12, categories: ['AI 绘画'] });
      if (url.pathname === '/api/v1/site/settings') return json(200, { customerServiceUrl: null, simulated: { images: true, training: true }, host });
      return undefined;
    });
    renderApp('/stats/cloud/apply');
    const card = await screen.findByRole('article', { name: 'Stable Diffusion WebUI' });
    expect(within(card).getByText('运营方尚未登记该应用的镜像')).toBeTruthy();
    expect(within(card).getByRole('button', { name: '本主机不销售' }).hasAttribute('disabled')).toBe(true);
    expect(await screen.findByText('本主机：2 核 / 4 GB 内存 / 无 GPU · Debian GNU/Linux 12 (bookworm)')).toBeTruthy();
  });

  it('searches and filters by category through the URL', async () => {
    const fetch = catalogueServer((url) =>
      url.pathname === APPS ? json(200, { items: [], total: 0, page: 1, pageSize: 12, categories: ['AI 绘画', '大模型'] }) : undefined,
    );
    const router = renderApp('/stats/cloud/apply');
    fireEvent.click(await screen.findByText('大模型'));
    await waitFor(() => expect(router.state.location.search).toBe(`?category=${encodeURIComponent('大模型')}`));
    fireEvent.change(screen.getByLabelText('搜索应用'), { target: { value: 'llama' } });
    fireEvent.keyDown(screen.getByLabelText('搜索应用'), { key: 'Enter', code: 'Enter', keyCode: 13 });
    await waitFor(() => {
      const last = calls(fetch, APPS).at(-1)!;
      expect(last.searchParams.get('keyword')).toBe('llama');
      expect(last.searchParams.get('category')).toBe('大模型');
    });
    expect(await screen.findByText('没有找到相关应用，换个关键词或分类试试')).toBeTruthy();
  });
});
