import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { fireEvent, screen, waitFor, within } from '@testing-library/react';
import { session } from '../../../session/store';
import { callsTo, json, page } from '../../../test/http';
import { renderApp } from '../../../test/render';
import { user } from '../../../test/fixtures/user';
import { order } from '../../../test/fixtures/cost';
import { ID, ID2, INSTANCES, instanceServer } from '../../../test/fixtures/instances';
import { dataDisk, diskQuote, DISKS, IMAGES, IMG, sharedImage } from '../../../test/fixtures/storage';

const DISK_PAGE = '/console/gpudata/disk';
const rowOf = async (text: string) => (await screen.findByText(text)).closest<HTMLElement>('tr')!;
const button = (scope: HTMLElement, text: string | RegExp) => within(scope).getByText(text).closest('button')!;
const dialogOf = async (text: string | RegExp) => (await screen.findAllByText(text)).at(-1)!.closest<HTMLElement>('.ant-modal')!;

const disks = [
  dataDisk(),
  dataDisk({
    instanceId: ID2,
    instanceName: '推理机-2',
    cycle: 'Day',
    prepaid: true,
    dailyPrice: '0',
    expireAt: '2026-11-24T08:00:00.000Z',
    status: 'Running',
    usedGb: null,
    sizeGb: 50,
    chargeableGb: 0,
    expandBlocked: '实例运行中，请先关机再数据盘扩容',
  }),
];

beforeEach(() => session.setLogin('tok', user));
afterEach(() => vi.unstubAllGlobals());

describe('data disk page', () => {
  it('lists each instance’s data disk: size, free, used, chargeable and daily cost, with a link to the instance', async () => {
    const fetch = instanceServer((url) => (url.pathname === DISKS ? json(200, { ...page(disks, url, 2), pricePerGbDay: '70' }) : undefined));
    renderApp(DISK_PAGE);
    const row = await rowOf('训练机-1');
    expect(within(row).getByText('训练机-1').closest('a')!.getAttribute('href')).toBe(`/console/ipvm/detail/Gpu/${ID}`);
    expect(within(row).getByText('200 GB')).toBeTruthy();
    expect(within(row).getByText('50 GB')).toBeTruthy();
    expect(within(row).getByText('37 / 200 GB')).toBeTruthy();
    expect(within(row).getByText('150 GB')).toBeTruthy();
    expect(row.querySelector('.price')!.textContent).toBe('¥1.05/天');
    expect(within(row).getByText('已关机')).toBeTruthy();
    expect(button(row, '扩容').disabled).toBe(false);

    const prepaid = await rowOf('推理机-2');
    expect(within(prepaid).getByText(/已含在周期费用内/)).toBeTruthy();
    expect(within(prepaid).getByText('--')).toBeTruthy(); // usage unknown
    expect(button(prepaid, '扩容').disabled).toBe(true);
    expect(screen.getByText(/¥0\.007\/GB\/天/)).toBeTruthy();
    expect(screen.getByText('共 2 块数据盘')).toBeTruthy();
    expect(callsTo(fetch, DISKS)[0]!.url.search).toBe('?page=1&pageSize=10');
  });

  it('expands a prepaid disk: live quote for the time left, then the ChangeDataDisk order in the pay dialog', async () => {
    const prepaidDisk = dataDisk({ cycle: 'Day', prepaid: true, dailyPrice: '0', expireAt: '2026-11-24T08:00:00.000Z' });
    const fetch = instanceServer((url, init) => {
      if (url.pathname === DISKS) return json(200, { ...page([prepaidDisk], url), pricePerGbDay: '70' });
      if (url.pathname === `${INSTANCES}/${ID}/disk/price` && init?.method === 'POST') {
        const { dataDiskGb } = JSON.parse(String(init.body)) as { dataDiskGb: number };
        return dataDiskGb === 400
          ? json(400, { code: 40020011, message: '实例已到期，请先续费再开机', detail: '实例已到期，请先续费再扩容' })
          : json(200, diskQuote({ newGb: dataDiskGb }));
      }
      if (url.pathname === `${INSTANCES}/${ID}/disk` && init?.method === 'POST') {
        return json(200, {
          order: order({ kind: 'Personal', type: 'ChangeDataDisk', category: 'Gpu', amount: '5250', description: '数据盘扩容 训练机-1：200 GB → 300 GB' }),
          instance: null,
        });
      }
      return undefined;
    });
    renderApp(DISK_PAGE);
    fireEvent.click(button(await rowOf('训练机-1'), '扩容'));
    const dialog = await dialogOf('数据盘扩容「训练机-1」');
    expect(within(dialog).getByText('200 GB（免费 50 GB）')).toBeTruthy();
    await waitFor(() => expect(within(dialog).getByTestId('expand-total').textContent).toBe('¥0.53'));
    expect(within(dialog).getByTestId('expand-note').textContent).toMatch(/按剩余 18 小时折算/);
    expect(callsTo(fetch, `${INSTANCES}/${ID}/disk/price`, 'POST').at(-1)!.body).toEqual({ dataDiskGb: 300 });

    fireEvent.change(within(dialog).getByLabelText('扩容后容量'), { target: { value: '400' } });
    expect(await within(dialog).findByText('询价失败：实例已到期，请先续费再扩容')).toBeTruthy();
    expect(button(dialog, '提交订单').disabled).toBe(true);
    fireEvent.change(within(dialog).getByLabelText('扩容后容量'), { target: { value: '300' } });
    await waitFor(() => expect(button(dialog, '提交订单').disabled).toBe(false));
    fireEvent.click(button(dialog, '提交订单'));
    await waitFor(() => expect(callsTo(fetch, `${INSTANCES}/${ID}/disk`, 'POST').map((c) => c.body)).toEqual([{ dataDiskGb: 300 }]));
    expect(await screen.findByText('支付订单')).toBeTruthy();
  });

  it('expands a post-paid disk with nothing to pay up front, saying what it will cost a day', async () => {
    const fetch = instanceServer((url, init) => {
      if (url.pathname === DISKS) return json(200, { ...page([dataDisk()], url), pricePerGbDay: '70' });
      if (url.pathname === `${INSTANCES}/${ID}/disk/price`)
        return json(200, diskQuote({ prepaid: false, remainingHours: 0, dailyPriceAfter: '17500', quote: { ...diskQuote().quote, total: '0' } }));
      if (url.pathname === `${INSTANCES}/${ID}/disk` && init?.method === 'POST') return json(200, { order: null, instance: null });
      return undefined;
    });
    renderApp(DISK_PAGE);
    fireEvent.click(button(await rowOf('训练机-1'), '扩容'));
    const dialog = await dialogOf('数据盘扩容「训练机-1」');
    await waitFor(() => expect(within(dialog).getByTestId('expand-note').textContent).toMatch(/无需预付.*每天 ¥1\.75，按小时扣费/));
    expect(within(dialog).getByTestId('expand-total').textContent).toBe('¥0.00');
    fireEvent.click(button(dialog, '确认扩容'));
    expect(await screen.findByText('扩容已开始，完成后数据盘为 300 GB')).toBeTruthy();
    expect(callsTo(fetch, `${INSTANCES}/${ID}/disk`, 'POST')).toHaveLength(1);
  });

  it('the share page shows a shared image and opens the purchase page with it; a link no longer shared says so', async () => {
    instanceServer((url) => {
      if (url.pathname === `${IMAGES}/shared/${IMG}`) return json(200, sharedImage({ owner: '139****1234' }));
      if (url.pathname.startsWith(`${IMAGES}/shared/`)) return json(404, { code: 40421002, message: '该镜像不存在、已删除或已取消分享' });
      return undefined;
    });
    const router = renderApp(`/image/share?id=${IMG}`);
    expect(await screen.findByRole('heading', { name: 'SD 训练环境' })).toBeTruthy();
    expect(screen.getByText('139****1234')).toBeTruthy();
    expect(screen.getByText('PyTorch 2.3.0')).toBeTruthy();
    expect(screen.getByText('18 GB')).toBeTruthy();
    fireEvent.click(screen.getByText('使用该镜像创建实例').closest('button')!);
    await waitFor(() => expect(router.state.location.pathname).toBe('/stats/purchase'));
    expect(router.state.location.search).toBe(`?userImageId=${IMG}`);
  });

  it('the share page answers a link that is not shared any more', async () => {
    instanceServer((url) =>
      url.pathname.startsWith(`${IMAGES}/shared/`) ? json(404, { code: 40421002, message: '该镜像不存在、已删除或已取消分享' }) : undefined,
    );
    renderApp('/image/share?id=00000000-0000-4000-8000-000000000000');
    expect(await screen.findByText('镜像不存在或已取消分享')).toBeTruthy();
  });
});
