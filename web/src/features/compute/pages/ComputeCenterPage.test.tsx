import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { fireEvent, screen, waitFor, within } from '@testing-library/react';
import { session } from '../../../session/store';
import { callsTo, calls, json } from '../../../test/http';
import { renderApp } from '../../../test/render';
import { user } from '../../../test/fixtures/user';
import { costServer, order, pkg } from '../../../test/fixtures/cost';
import { computeHandler, GEN_TASKS, genTask, HOURS_ID, hoursPkg, INSTANCES, TRAIN_JOBS } from '../../../test/fixtures/compute';
import { instance } from '../../../test/fixtures/instances';
import { JOB_ID, loraJob } from '../../../test/fixtures/training';

const CREATE = '/shinichi/api/v2.1/tiio/resource';
// Role queries over the whole console take seconds in jsdom: these tests find things by text and label.
const href = (el: HTMLElement) => el.closest('a')!.getAttribute('href');

beforeEach(() => session.setLogin('tok', user));
afterEach(() => vi.unstubAllGlobals());

describe('算力商城', () => {
  it('shows the GPU-hour packages by card with their discount, and buys one after confirming the amount', async () => {
    const created = order({ description: 'RTX 4090 时长包 100 小时 × 1（¥168.00）', amount: '1680000' });
    const fetch = costServer((url, init) => (url.pathname === CREATE && init?.method === 'POST' ? json(200, created) : undefined), computeHandler());
    const router = renderApp('/compute/center');

    const card = await screen.findByLabelText('资源包 RTX 4090 时长包 100 小时');
    const group = card.closest('section[aria-label="RTX 4090 时长包"]');
    expect(group).toBeTruthy();
    expect(within(card).getByText('4.2 折')).toBeTruthy(); // ¥168 against 100 h × ¥3.96
    expect(within(card).getAllByText('168.00')).toHaveLength(2); // the price, and the total of one
    expect(within(card).getByText('396.00').closest('.price-strike')).toBeTruthy();
    expect(within(card).getByText('有效期 90 天')).toBeTruthy();
    expect(within(card).getByText('LoRA 训练与 AI 绘图、按量计费的 RTX 4090 实例优先抵扣')).toBeTruthy();
    // A package at its hours' price shows no discount; the token package is not compute.
    const a100 = screen.getByLabelText('资源包 A100 80GB 时长包 50 小时');
    expect(within(a100).queryByText(/折$/)).toBeNull();
    expect(screen.queryByLabelText('资源包 大模型 Token 包 1000 万')).toBeNull();

    // SD WebUI / ComfyUI: shared generation, or an application of one's own on the purchase page.
    expect(href(screen.getByText('立即生图'))).toBe('/sd/diffusion');
    expect(href(screen.getByText('部署 SD WebUI'))).toBe('/stats/purchase?applicationId=sd-webui&gpuTypeId=rtx4090');
    expect(href(screen.getByText('部署 ComfyUI'))).toBe('/stats/purchase?applicationId=comfyui&gpuTypeId=rtx4090');

    fireEvent.click(within(card).getByText('立即购买'));
    const confirm = (await screen.findAllByText('确认购买「RTX 4090 时长包 100 小时」？'))[0]!.closest<HTMLElement>('.ant-modal')!;
    expect(within(confirm).getByText('¥168.00')).toBeTruthy();
    expect(within(confirm).getByText(/原价 ¥396.00，4.2 折/)).toBeTruthy();
    expect(callsTo(fetch, CREATE, 'POST')).toEqual([]); // nothing ordered before the confirmation
    fireEvent.click(within(confirm).getByRole('button', { name: '确认购买' }));

    const dialog = (await screen.findByText('支付订单')).closest<HTMLElement>('.ant-modal')!;
    expect(within(dialog).getByText(created.description)).toBeTruthy();
    expect(callsTo(fetch, CREATE, 'POST').map((c) => c.body)).toEqual([{ productId: 'gpu-hours-4090-100', count: 1 }]);
    expect(router.state.location.search).toBe('');
  });
});

describe('我的算力', () => {
  it('lists the GPU-hour packages with what is left and a link to each one’s detail, and the work running now', async () => {
    const soon = { ...hoursPkg, id: 'p-soon', name: '即将到期的包', remain: '5', expiresAt: new Date(Date.now() + 3 * 86_400_000).toISOString() };
    const fetch = costServer(computeHandler({ packages: [hoursPkg, soon, pkg], jobs: [loraJob()], tasks: [genTask()] }));
    const router = renderApp('/compute/center?tab=mine');

    const row = (await screen.findByText('37.5 卡时')).closest('tr')!;
    expect(within(row).getByText('RTX 4090 时长包 100 小时')).toBeTruthy();
    expect(within(row).getByText('/ 100 卡时')).toBeTruthy();
    expect(within(row).getByLabelText('剩余 37.5%')).toBeTruthy();
    expect(await within(row).findByText('RTX 4090')).toBeTruthy();
    expect(href(within(row).getByText('详情'))).toBe(`/compute/detail?id=${HOURS_ID}`);
    expect(within(screen.getByText('即将到期的包').closest('tr')!).getByText('即将过期')).toBeTruthy();
    expect(screen.queryByText('大模型 Token 包 1000 万')).toBeNull(); // tokens are not GPU time

    // The LoRA job opens its drawer on the training page; the image task its page.
    const job = (await screen.findByText('mychar')).closest('tr')!;
    expect(href(within(job).getByText('mychar'))).toBe(`/sd/train?job=${JOB_ID}`);
    expect(within(job).getByText('LoRA 训练')).toBeTruthy();
    expect(within(job).getByText('训练中')).toBeTruthy();
    const task = screen.getByText('mychar, 1girl, watercolor, smiling').closest('tr')!;
    expect(href(within(task).getByText('mychar, 1girl, watercolor, smiling'))).toBe('/sd/diffusion');
    expect(within(task).getByText('生成中')).toBeTruthy();
    expect(within(task).getByText('已生成 1/4 张 · 时长包支付 4 张')).toBeTruthy();
    expect(calls(fetch, TRAIN_JOBS)[0]!.searchParams.get('status')).toBe('active');
    expect(calls(fetch, GEN_TASKS)[0]!.searchParams.get('status')).toBe('active');

    expect(await screen.findByText(/还没有 ComfyUI \/ SD WebUI 实例/)).toBeTruthy();
    expect(calls(fetch, INSTANCES)[0]!.searchParams.get('filterBy')).toBe('application,comfyui|sd-webui');
    fireEvent.click(screen.getByText('算力商城'));
    await waitFor(() => expect(router.state.location.search).toBe('?tab=shop'));
  });

  it('lists the ComfyUI and SD WebUI instances, opening a running one’s application', async () => {
    const comfy = instance({ id: 'c0ffee00-0000-4000-8000-000000000001', name: 'ComfyUI-1', applicationId: 'comfyui', applicationName: 'ComfyUI' });
    const withApp = { ...comfy, access: { ...comfy.access!, appUrl: 'http://localhost/app/c0ffee00-0000-4000-8000-000000000001/' } };
    const stopped = instance({
      id: 'c0ffee00-0000-4000-8000-000000000002',
      name: 'WebUI-1',
      status: 'Stopped',
      applicationId: 'sd-webui',
      applicationName: 'SD WebUI',
    });
    costServer(computeHandler({ instances: [withApp, stopped] }));
    renderApp('/compute/center?tab=mine');
    const row = (await screen.findByText('ComfyUI-1')).closest('tr')!;
    expect(within(row).getByText('打开 ComfyUI').closest('a')!.getAttribute('href')).toBe(withApp.access.appUrl);
    const off = screen.getByText('WebUI-1').closest('tr')!;
    expect(within(off).getByText('开机后可打开应用')).toBeTruthy();
  });

  it('no GPU-hour package yet: says so and leads to the shop', async () => {
    costServer(computeHandler({ packages: [pkg] }));
    const router = renderApp('/compute/center?tab=mine');
    expect(await screen.findByText('没有进行中的 LoRA 训练或 AI 绘图任务')).toBeTruthy();
    fireEvent.click(screen.getByText('去算力商城'));
    expect(await screen.findByLabelText('资源包 RTX 4090 时长包 100 小时')).toBeTruthy();
    expect(router.state.location.search).toBe('?tab=shop');
  });
});
