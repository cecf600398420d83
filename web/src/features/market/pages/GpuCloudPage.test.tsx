import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { fireEvent, screen, waitFor, within } from '@testing-library/react';
import { session } from '../../../session/store';
import { calls, json } from '../../../test/http';
import { renderApp } from '../../../test/render';
import { catalogueServer, host } from '../../../test/fixtures/catalogue';

beforeEach(() => session.reload());
afterEach(() => vi.unstubAllGlobals());

const GPU_LIST = '/upgpu/api/v2.1/gpu/list';

describe('the GPU market', () => {
  it('asks gpu/list with the filters of the URL', async () => {
    const fetch = catalogueServer();
    renderApp('/stats/cloud/gpu?regionId=bj-b&gpuTypeId=rtx4090&gpuCount=2&cycle=Day&sort=desc');
    await screen.findByRole('article', { name: /RTX 4090/ });
    const [url] = calls(fetch, GPU_LIST);
    expect(url!.searchParams.get('filterBy')).toBe('region,bj-b,gpuType,rtx4090,gpuCount,2');
    expect(url!.searchParams.get('cycle')).toBe('Day');
    expect(url!.searchParams.get('sortBy')).toBe('priceDay,d');
  });

  it('choosing a GPU model and a cycle puts them in the URL and asks again', async () => {
    const fetch = catalogueServer();
    const router = renderApp('/stats/cloud/gpu');
    const models = await screen.findByRole('radiogroup', { name: 'GPU 型号' });
    fireEvent.click(within(models).getByText('A100 80GB'));
    await waitFor(() => expect(router.state.location.search).toBe('?gpuTypeId=a100'));
    fireEvent.click(within(screen.getByRole('region', { name: '筛选' })).getByText('按月'));
    await waitFor(() => expect(router.state.location.search).toBe('?gpuTypeId=a100&cycle=Month'));
    await waitFor(() => {
      const last = calls(fetch, GPU_LIST).at(-1)!;
      expect(last.searchParams.get('filterBy')).toBe('gpuType,a100');
      expect(last.searchParams.get('cycle')).toBe('Month');
    });
  });

  it('on a market of one real host without cards: says so instead of an empty list', async () => {
    const thisHost = {
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
    catalogueServer((url) => {
      if (url.pathname === GPU_LIST) return json(200, { items: [], total: 0, page: 1, pageSize: 24 });
      if (url.pathname === '/api/v1/site/settings') return json(200, { customerServiceUrl: null, simulated: { images: true, training: true }, host: thisHost });
      return undefined;
    });
    renderApp('/stats/cloud/gpu');
    expect(await screen.findByText('本主机没有 GPU（2 核 / 4 GB 内存 / 无 GPU），暂无 GPU 主机可租用；可购买 CPU 实例')).toBeTruthy();
    expect(screen.getByText('本主机：2 核 / 4 GB 内存 / 无 GPU · Debian GNU/Linux 12 (bookworm)')).toBeTruthy();
  });

  it('shows a full host greyed out with a disabled 已租满 button', async () => {
    catalogueServer((url) =>
      url.pathname === GPU_LIST ? json(200, { items: [host({ id: 'full', gpuFree: 0, name: 'FULL' })], total: 1, page: 1, pageSize: 24 }) : undefined,
    );
    renderApp('/stats/cloud/gpu');
    const card = await screen.findByRole('article', { name: /RTX 4090/ });
    expect(card.className).toContain('is-full');
    expect(within(card).getByText(/空闲/).textContent).toContain('空闲 0 / 总 8 卡');
    const button = within(card).getByRole('button', { name: '已租满' }) as HTMLButtonElement;
    expect(button.disabled).toBe(true);
    expect(within(card).queryByRole('button', { name: '立即租用' })).toBeNull();
  });

  it('立即租用 opens the purchase page configured with the host and the market choices', async () => {
    catalogueServer();
    const router = renderApp('/stats/cloud/gpu?cycle=Week&gpuCount=2');
    const card = await screen.findByRole('article', { name: /RTX 4090/ });
    expect(within(card).getByText('8.5 折')).toBeTruthy();
    fireEvent.click(within(card).getByRole('button', { name: '立即租用' }));
    await waitFor(() => expect(router.state.location.pathname).toBe('/stats/purchase'));
    expect(Object.fromEntries(new URLSearchParams(router.state.location.search))).toMatchObject({
      hostId: 'h1',
      gpuTypeId: 'rtx4090',
      regionId: 'bj-b',
      roomId: 'bj-b-1',
      cycle: 'Week',
      gpuCount: '2',
    });
  });

  it('an empty result offers to reset the filters', async () => {
    catalogueServer((url) => (url.pathname === GPU_LIST ? json(200, { items: [], total: 0, page: 1, pageSize: 24 }) : undefined));
    const router = renderApp('/stats/cloud/gpu?gpuTypeId=a100&gpuCount=8');
    expect(await screen.findByText('没有符合条件的主机，换个地区或型号试试')).toBeTruthy();
    fireEvent.click(screen.getByRole('button', { name: '重置筛选' }));
    await waitFor(() => expect(router.state.location.search).toBe(''));
  });

  it('a failed load shows the error with a retry', async () => {
    catalogueServer((url) => (url.pathname === GPU_LIST ? json(500, { code: 50000001, message: '服务器内部错误' }) : undefined));
    renderApp('/stats/cloud/gpu');
    expect(await screen.findByText('加载失败')).toBeTruthy();
    expect(screen.getByRole('button', { name: '重试' })).toBeTruthy();
  });
});
