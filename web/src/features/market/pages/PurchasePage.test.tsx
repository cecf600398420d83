import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { fireEvent, screen, waitFor, within } from '@testing-library/react';
import type { Application, Order } from '@console/contract';
import { session } from '../../../session/store';
import { calls, type Handler, json } from '../../../test/http';
import { renderApp } from '../../../test/render';
import { catalogueServer, images, quoteFor } from '../../../test/fixtures/catalogue';
import { user } from '../../../test/fixtures/user';

const FROM_CARD = '/stats/purchase?hostId=h1&gpuTypeId=rtx4090&regionId=bj-b&roomId=bj-b-1&cycle=Hour&gpuCount=1';
const VISITOR_QUOTE = '/infra/api/v2.1/gpu/order/price';
const USER_QUOTE = '/infra/api/v2.1/gpu/order/user/price';

const total = () => screen.findByTestId('quote-total');
const panel = () => screen.getByLabelText('配置费用');

beforeEach(() => session.reload());
afterEach(() => vi.unstubAllGlobals());

describe('the purchase page', () => {
  it('quotes the configuration of the URL and again when the cycle changes', async () => {
    const fetch = catalogueServer();
    renderApp(FROM_CARD);
    expect((await total()).textContent).toBe('¥1.98');
    const [first] = fetch.mock.calls.filter(([u]) => String(u) === VISITOR_QUOTE);
    expect(JSON.parse(String(first![1]!.body))).toEqual({
      gpuTypeId: 'rtx4090',
      gpuCount: 1,
      regionId: 'bj-b',
      roomId: 'bj-b-1',
      hostId: 'h1',
      imageId: 'pytorch-2.3',
      cycle: 'Hour',
      duration: 1,
      dataDiskGb: 0,
    });

    fireEvent.click(within(screen.getByRole('radiogroup', { name: '计费方式' })).getByText('按日'));
    await waitFor(async () => expect((await total()).textContent).toBe('¥45.14'));
  });

  it('preselects an image of my images (or a shared one) from the URL, and goes back to the catalogue images on request', async () => {
    session.setLogin('tok', user);
    const IMG = '9b1f2c3d-4e5f-4a6b-8c7d-0e1f2a3b4c5d';
    const shared = {
      id: IMG,
      name: '分享的 SD 环境',
      category: 'Gpu',
      baseImageId: 'pytorch-2.3',
      baseImageName: 'PyTorch 2.3',
      gpuName: 'RTX 4090',
      sizeGb: 18,
      owner: '139****1234',
      mine: false,
      createdAt: '2026-11-23T09:00:00.000Z',
    };
    const fetch = buyerServer((url) => (url.pathname === `/upgpu/api/v2.1/images/shared/${IMG}` ? json(200, shared) : undefined));
    const router = renderApp(`${FROM_CARD}&userImageId=${IMG}`);
    const choice = await screen.findByTestId('user-image-choice');
    expect(within(choice).getByText('分享的 SD 环境')).toBeTruthy();
    expect(within(choice).getByText(/分享者 139\*{4}1234/)).toBeTruthy();
    expect((await total()).textContent).toBe('¥1.98');
    const quoted = fetch.mock.calls.filter(([u]) => String(u) === USER_QUOTE).map(([, init]) => JSON.parse(String(init!.body)) as Record<string, unknown>);
    expect(quoted.at(-1)).toMatchObject({ userImageId: IMG });
    expect(quoted.at(-1)!.imageId).toBeUndefined();

    fireEvent.click(within(choice).getByText('改选公共镜像').closest('button')!);
    await waitFor(() => expect(new URLSearchParams(router.state.location.search).get('userImageId')).toBeNull());
    expect(await screen.findByLabelText('镜像')).toBeTruthy();
  });

  it('shows the server lines, the discount and the total', async () => {
    catalogueServer();
    renderApp(FROM_CARD.replace('cycle=Hour', 'cycle=Day').concat('&duration=2'));
    await waitFor(async () => expect((await total()).textContent).toBe('¥90.29'));
    const lines = within(panel()).getByRole('list', { name: '费用明细' });
    expect(within(lines).getByText('RTX 4090 × 1（2 天）')).toBeTruthy();
    expect(within(lines).getByText('¥95.04')).toBeTruthy(); // list price of 2 days
    expect(within(lines).getByText('-¥4.75')).toBeTruthy(); // the 0.95 cycle discount
    expect(within(panel()).getByText('9.5 折')).toBeTruthy();
    expect(within(panel()).getByText(/已优惠 ¥4\.75/)).toBeTruthy();
  });

  it('shows a capacity conflict inline and does not let the buyer go on', async () => {
    catalogueServer((url) =>
      url.pathname === VISITOR_QUOTE
        ? json(409, { code: 40920001, message: '所选配置暂无空闲资源，请更换地区、主机或减少数量', detail: '主机 BJ-B-1-A01 当前空闲 5 卡，不足 8 卡' })
        : undefined,
    );
    renderApp(FROM_CARD.replace('gpuCount=1', 'gpuCount=8'));
    expect(await screen.findByText('所选配置暂无空闲资源，请更换地区、主机或减少数量')).toBeTruthy();
    expect(within(panel()).getByText('主机 BJ-B-1-A01 当前空闲 5 卡，不足 8 卡')).toBeTruthy();
    expect((screen.getByRole('button', { name: '立即购买' }) as HTMLButtonElement).disabled).toBe(true);
  });

  it('sends a visitor to log in with the whole configuration in redirect', async () => {
    catalogueServer();
    const router = renderApp(FROM_CARD);
    await total();
    // Typing right after the click: the second edit must not undo the first while the URL catches up.
    fireEvent.click(within(screen.getByRole('radiogroup', { name: '计费方式' })).getByText('按日'));
    fireEvent.change(screen.getByLabelText('实例名称'), { target: { value: '训练机' } });
    await waitFor(async () => expect((await total()).textContent).toBe('¥45.14'));
    await waitFor(() => expect((screen.getByRole('button', { name: '立即购买' }) as HTMLButtonElement).disabled).toBe(false));
    fireEvent.click(screen.getByRole('button', { name: '立即购买' }));

    await waitFor(() => expect(router.state.location.pathname).toBe('/login'));
    const redirect = new URLSearchParams(router.state.location.search).get('redirect')!;
    const back = new URL(redirect, 'http://localhost');
    expect(back.pathname).toBe('/stats/purchase');
    expect(Object.fromEntries(back.searchParams)).toMatchObject({
      hostId: 'h1',
      gpuTypeId: 'rtx4090',
      regionId: 'bj-b',
      roomId: 'bj-b-1',
      gpuCount: '1',
      cycle: 'Day',
      duration: '1',
      imageId: 'pytorch-2.3',
      name: '训练机',
    });
  });

  it('a logged-in buyer gets the user quote, can apply a voucher, and pays the order with it', async () => {
    session.setLogin('tok', user);
    const fetch = buyerServer((url, init) => {
      if (url.pathname === GPU_ORDER && init?.method === 'POST') return json(200, gpuOrder({ status: 'Unpaid', type: 'NewBuy', amount: '451440' }));
      return undefined;
    });
    const router = renderApp(DAY);
    expect((await total()).textContent).toBe('¥45.14');
    expect(calls(fetch, VISITOR_QUOTE)).toHaveLength(0);
    expect(calls(fetch, '/order/api/v2.1/vouchers')[0]!.searchParams.get('category')).toBe('Gpu');

    fireEvent.mouseDown(await screen.findByRole('combobox', { name: '代金券' }));
    fireEvent.click(await screen.findByText(/新用户代金券 · ¥50\.00（无门槛，2099-01-31 到期）/));
    await waitFor(async () => expect((await total()).textContent).toBe('¥0.00'));
    expect(within(panel()).getByText('代金券：新用户代金券')).toBeTruthy();
    expect(new URLSearchParams(router.state.location.search).get('voucherId')).toBe(voucher.id);
    const sent = fetch.mock.calls.filter(([u]) => String(u) === USER_QUOTE).map(([, i]) => JSON.parse(String(i!.body)));
    expect(sent.at(-1)).toMatchObject({ voucherId: voucher.id });

    const dialog = await confirmation();
    expect(within(dialog).getByText('应付金额')).toBeTruthy();
    expect(dialog.textContent).toContain('¥0.00');
    expect(dialog.textContent).toContain('已含代金券抵扣 ¥45.14');
    expect(dialog.textContent).not.toContain('即将开放');
    fireEvent.click(within(dialog).getByRole('button', { name: '提交订单' }));

    // The order is created without the voucher (the server prices it again); the pay dialog starts with it.
    const pay = await dialogWith('支付订单');
    expect(within(pay).getByText('RTX 4090 × 1（1 天）')).toBeTruthy();
    await waitFor(() => expect(within(pay).getByTestId('pay-due').textContent).toBe('¥0.00'));
    expect(within(pay).getByText('-¥45.14')).toBeTruthy();
    expect(orderBodies(fetch)).toEqual([
      { gpuTypeId: 'rtx4090', gpuCount: 1, regionId: 'bj-b', roomId: 'bj-b-1', hostId: 'h1', imageId: 'pytorch-2.3', cycle: 'Day', duration: 1, dataDiskGb: 0 },
    ]);
    expect(router.state.location.pathname).toBe('/stats/purchase');
  });

  it('post-paid: the confirmation states the hourly price, then the order is placed and the buyer sees the GPU list', async () => {
    session.setLogin('tok', user);
    const fetch = buyerServer((url, init) => {
      if (url.pathname === GPU_ORDER && init?.method === 'POST') return json(200, gpuOrder({ status: 'Time', type: 'Usage', amount: '0' }));
      return undefined;
    });
    const router = renderApp(`${FROM_CARD}&duration=3`);
    await waitFor(async () => expect((await total()).textContent).toBe('¥5.94'));
    // The page and the confirmation say the same: billed by the second, not by the hour.
    expect(panel().textContent).toContain('开机期间按秒计费');
    // A post-paid order has nothing to pay up front: no voucher to choose.
    expect(screen.queryByRole('combobox', { name: '代金券' })).toBeNull();
    fireEvent.change(screen.getByLabelText('实例名称'), { target: { value: '训练机' } });
    await waitFor(() => expect(new URLSearchParams(router.state.location.search).get('name')).toBe('训练机'));
    // The summary shows the name once the page has rendered it: the order is placed with what it shows.
    await waitFor(() => expect(within(panel()).getByText('训练机')).toBeTruthy());

    const dialog = await confirmation();
    expect(within(dialog).getByText('实例名称')).toBeTruthy();
    expect(within(dialog).getByText('训练机')).toBeTruthy();
    expect(dialog.textContent).toContain('按量计费：¥1.98/小时，开机期间按秒计费，余额不足时自动关机');
    expect(dialog.textContent).not.toContain('即将开放');
    expect(orderBodies(fetch)).toHaveLength(0); // nothing is ordered before 提交订单
    fireEvent.click(within(dialog).getByRole('button', { name: '提交订单' }));

    await waitFor(() => expect(router.state.location.pathname).toBe('/console/gpu-generic'));
    expect(await screen.findByText('订单已提交，实例正在创建，开机后按秒计费')).toBeTruthy();
    expect(orderBodies(fetch)).toEqual([
      {
        gpuTypeId: 'rtx4090',
        gpuCount: 1,
        regionId: 'bj-b',
        roomId: 'bj-b-1',
        hostId: 'h1',
        imageId: 'pytorch-2.3',
        cycle: 'Hour',
        duration: 3,
        dataDiskGb: 0,
        name: '训练机',
      },
    ]);
    await waitFor(() => expect(calls(fetch, '/upgpu/api/v2.1/instances').length).toBeGreaterThan(0));
  });

  it('prepaid: closing the pay dialog unpaid says the order waits on the bill page', async () => {
    session.setLogin('tok', user);
    buyerServer((url, init) => {
      if (url.pathname === GPU_ORDER && init?.method === 'POST') return json(200, gpuOrder({ status: 'Unpaid', type: 'NewBuy', amount: '451440' }));
      return undefined;
    });
    const router = renderApp(DAY);
    expect((await total()).textContent).toBe('¥45.14');
    const dialog = await confirmation();
    expect(within(dialog).getByText('应付金额')).toBeTruthy();
    expect(dialog.textContent).toContain('¥45.14');
    fireEvent.click(within(dialog).getByRole('button', { name: '提交订单' }));

    const pay = await dialogWith('支付订单');
    await waitFor(() => expect(within(pay).getByTestId('pay-due').textContent).toBe('¥45.14'));
    fireEvent.click(within(pay).getByRole('button', { name: /关闭|Close/ }));
    expect(await screen.findByText('订单待支付')).toBeTruthy();
    expect(screen.getByText(/尚未支付，已保存在/).textContent).toContain(ORDER_UID);
    expect(router.state.location.pathname).toBe('/stats/purchase');
    fireEvent.click(screen.getByRole('link', { name: '账单页' }));
    await waitFor(() => expect(router.state.location.pathname).toBe('/console/cost/bill'));
  });

  it('prepaid: once the order is paid the buyer is taken to the GPU list', async () => {
    session.setLogin('tok', user);
    buyerServer((url, init) => {
      if (url.pathname === GPU_ORDER && init?.method === 'POST') return json(200, gpuOrder({ status: 'Unpaid', type: 'NewBuy', amount: '451440' }));
      if (url.pathname === `${ORDER_PATH}/pay` && init?.method === 'POST') return json(200, { orderUid: ORDER_UID, status: 'Success', payment: null });
      return undefined;
    });
    const router = renderApp(DAY);
    expect((await total()).textContent).toBe('¥45.14');
    fireEvent.click(within(await confirmation()).getByRole('button', { name: '提交订单' }));

    const pay = await dialogWith('支付订单');
    fireEvent.click(await within(pay).findByRole('button', { name: '余额支付 ¥45.14' }));
    fireEvent.click(within(await dialogWith('确认支付 ¥45.14')).getByRole('button', { name: '确认支付' }));
    await waitFor(() => expect(router.state.location.pathname).toBe('/console/gpu-generic'));
    expect(await screen.findByText('支付成功，实例正在创建')).toBeTruthy();
  });

  it('a CPU instance is ordered through the generic endpoint and shown under CPU instances', async () => {
    session.setLogin('tok', user);
    const size = {
      id: 'gen-c2m4',
      category: 'Generic',
      name: '通用型 2 核 4 GB',
      cpu: 2,
      memoryGb: 4,
      systemDiskGb: 40,
      bandwidthMbps: 5,
      gpuName: '',
      regionIds: ['bj-b'],
      description: '',
      prices: [{ cycle: 'Hour', listPrice: '3000', price: '3000', discountRate: '1' }],
      price: { cycle: 'Hour', listPrice: '3000', price: '3000', discountRate: '1' },
    };
    const os = {
      ...images[0]!,
      id: 'ubuntu-22.04',
      kind: 'os',
      name: 'Ubuntu 22.04',
      framework: '',
      frameworkVersion: '',
      cuda: '',
      python: '',
      forGpu: false,
      forCategories: ['Generic'],
    };
    const sizeQuote = {
      ...quoteFor('Hour', 2),
      category: 'Generic',
      lines: [{ kind: 'compute', name: '通用型 2 核 4 GB × 1（2 小时）', unitPrice: '3000', quantity: 2, amount: '6000' }],
      listTotal: '6000',
      total: '6000',
      discountTotal: '0',
      placement: { regionId: 'bj-b' },
    };
    const fetch = buyerServer((url, init) => {
      switch (url.pathname) {
        case '/infra/api/v2.1/sizes':
          return json(200, { items: [size], total: 1, page: 1, pageSize: 100 });
        case '/infra/api/v2.1/images':
          return json(200, { items: [os], total: 1, page: 1, pageSize: 100 });
        case '/infra/api/v2.1/order/user/price':
          return json(200, sizeQuote);
        case SIZE_ORDER:
          return init?.method === 'POST'
            ? json(200, gpuOrder({ kind: 'default', category: 'Generic', status: 'Time', type: 'Usage', amount: '0' }))
            : undefined;
        default:
          return undefined;
      }
    });
    const router = renderApp('/stats/purchase?category=Generic&regionId=bj-b&sizeId=gen-c2m4&cycle=Hour&duration=2');
    await waitFor(async () => expect((await total()).textContent).toBe('¥0.60'));
    const dialog = await confirmation();
    expect(dialog.textContent).toContain('按量计费：¥0.30/小时，开机期间按秒计费，余额不足时自动关机');
    fireEvent.click(within(dialog).getByRole('button', { name: '提交订单' }));

    await waitFor(() => expect(router.state.location.pathname).toBe('/console/generic/cpu'));
    const posted = fetch.mock.calls.filter(([u, i]) => String(u) === SIZE_ORDER && i?.method === 'POST').map(([, i]) => JSON.parse(String(i!.body)));
    expect(posted).toEqual([{ sizeId: 'gen-c2m4', regionId: 'bj-b', count: 1, imageId: 'ubuntu-22.04', cycle: 'Hour', duration: 2, dataDiskGb: 0 }]);
    expect(orderBodies(fetch)).toHaveLength(0);
  });

  it('an application that needs no card is bought on a CPU size: no image to pick, the quote and order name it, and it is shown under 镜像应用', async () => {
    session.setLogin('tok', user);
    const price = { cycle: 'Hour' as const, listPrice: '1200', price: '1200', discountRate: '1' };
    const size = {
      id: 'gen-c2m4',
      category: 'Generic' as const,
      name: '通用型 2 核 4 GB',
      cpu: 2,
      memoryGb: 4,
      systemDiskGb: 40,
      bandwidthMbps: 5,
      gpuName: '',
      regionIds: ['bj-b'],
      description: '',
      prices: [price],
      price,
    };
    const notebook: Application = {
      id: 'jupyter-notebook',
      name: 'Jupyter Notebook · 数据分析',
      category: '数据科学',
      description: '数据分析',
      cover: '/covers/jupyter-notebook.svg',
      defaultPort: 8888,
      imageId: 'notebook-6.4',
      minGpuMemoryGb: 0,
      tags: [],
      sizes: [size],
    };
    const appQuote = {
      ...quoteFor('Hour', 1),
      category: 'App',
      lines: [{ kind: 'compute', name: '通用型 2 核 4 GB（1 小时）', unitPrice: '1200', quantity: 1, amount: '1200' }],
      listTotal: '1200',
      total: '1200',
      discountTotal: '0',
      placement: { regionId: 'bj-b' },
    };
    const fetch = buyerServer((url, init) => {
      switch (url.pathname) {
        case '/infra/api/v2.1/sizes':
          return json(200, { items: [size], total: 1, page: 1, pageSize: 100 });
        case '/upgpu/api/v2.1/application/list':
          return json(200, { items: [notebook], total: 1, page: 1, pageSize: 100, categories: ['数据科学'] });
        case '/infra/api/v2.1/order/user/price':
          return json(200, appQuote);
        case SIZE_ORDER:
          return init?.method === 'POST' ? json(200, gpuOrder({ kind: 'Personal', category: 'App', status: 'Time', type: 'Usage', amount: '0' })) : undefined;
        default:
          return undefined;
      }
    });
    const router = renderApp('/stats/purchase?applicationId=jupyter-notebook&category=Generic&regionId=bj-b');
    await waitFor(async () => expect((await total()).textContent).toBe('¥0.12'));
    expect(screen.getByText('Jupyter Notebook · 数据分析', { selector: 'strong' })).toBeTruthy();
    expect(screen.getByText(/无需 GPU，按所选 CPU 规格计费/)).toBeTruthy();
    expect(screen.queryByLabelText('镜像')).toBeNull();
    expect(calls(fetch, '/infra/api/v2.1/images')).toHaveLength(0);
    const quoted = fetch.mock.calls.filter(([u]) => String(u) === '/infra/api/v2.1/order/user/price').map(([, i]) => JSON.parse(String(i!.body)));
    expect(quoted.at(-1)).toEqual({
      sizeId: 'gen-c2m4',
      regionId: 'bj-b',
      count: 1,
      applicationId: 'jupyter-notebook',
      cycle: 'Hour',
      duration: 1,
      dataDiskGb: 0,
    });

    fireEvent.click(within(await confirmation()).getByRole('button', { name: '提交订单' }));
    await waitFor(() => expect(router.state.location.pathname).toBe('/console/app'));
    const posted = fetch.mock.calls.filter(([u, i]) => String(u) === SIZE_ORDER && i?.method === 'POST').map(([, i]) => JSON.parse(String(i!.body)));
    expect(posted).toEqual([{ sizeId: 'gen-c2m4', regionId: 'bj-b', count: 1, applicationId: 'jupyter-notebook', cycle: 'Hour', duration: 1, dataDiskGb: 0 }]);
  });

  it('an application that needs no card, opened on the GPU page, says so and switches to the CPU sizes', async () => {
    const notebook: Application = {
      id: 'jupyter-notebook',
      name: 'Jupyter Notebook · 数据分析',
      category: '数据科学',
      description: '数据分析',
      cover: '',
      defaultPort: 8888,
      imageId: 'notebook-6.4',
      minGpuMemoryGb: 0,
      tags: [],
    };
    catalogueServer((url) =>
      url.pathname === '/upgpu/api/v2.1/application/list' ? json(200, { items: [notebook], total: 1, page: 1, pageSize: 100, categories: [] }) : undefined,
    );
    const router = renderApp('/stats/purchase?applicationId=jupyter-notebook');
    expect(await screen.findByText('该应用不使用 GPU，只能部署在 CPU 实例规格上')).toBeTruthy();
    fireEvent.click(screen.getByRole('button', { name: '改用 CPU 规格' }));
    await waitFor(() => {
      const q = new URLSearchParams(router.state.location.search);
      expect([q.get('category'), q.get('applicationId')]).toEqual(['Generic', 'jupyter-notebook']);
    });
  });

  it('a balance too low for one hour (40011001) keeps the buyer on the page and offers a recharge', async () => {
    session.setLogin('tok', user);
    const fetch = buyerServer((url, init) =>
      url.pathname === GPU_ORDER && init?.method === 'POST'
        ? json(400, { code: 40011001, message: '余额不足，请先充值', detail: '按量计费需余额不少于 1.98 元（1 小时费用），当前可用 0.00 元' })
        : undefined,
    );
    const router = renderApp(FROM_CARD);
    expect((await total()).textContent).toBe('¥1.98');
    fireEvent.click(within(await confirmation()).getByRole('button', { name: '提交订单' }));

    const refused = await dialogWith('去充值');
    expect(refused.textContent).toContain('按量计费需余额不少于 1.98 元（1 小时费用），当前可用 0.00 元');
    expect(orderBodies(fetch)).toHaveLength(1);
    expect(router.state.location.pathname).toBe('/stats/purchase');
    expect(new URLSearchParams(router.state.location.search).get('gpuTypeId')).toBe('rtx4090');
    expect(calls(fetch, '/upgpu/api/v2.1/instances')).toHaveLength(0);

    fireEvent.click(within(refused).getByRole('button', { name: '取消' }));
    expect(router.state.location.pathname).toBe('/stats/purchase');
    expect((screen.getByRole('button', { name: '立即购买' }) as HTMLButtonElement).disabled).toBe(false);
  });
});

const DAY = FROM_CARD.replace('cycle=Hour', 'cycle=Day');
const GPU_ORDER = '/infra/api/v2.1/gpu/order';
const SIZE_ORDER = '/infra/api/v2.1/order';
const ORDER_UID = 'O20261123085616abcd0001';
const ORDER_PATH = `/order/api/v2.1/gpu/order/${ORDER_UID}`;

const voucher = {
  id: '0b6c1f0e-2a59-4d51-9b8e-6a3c0f2b9d11',
  name: '新用户代金券',
  amount: '500000',
  minSpend: '0',
  categories: [],
  status: 'Unused',
  validFrom: '2025-01-01T00:00:00Z',
  expiresAt: '2099-01-31T00:00:00Z',
};

function gpuOrder(over: Partial<Order>): Order {
  const q = quoteFor(over.type === 'Usage' ? 'Hour' : 'Day');
  return {
    orderUid: ORDER_UID,
    kind: 'Personal',
    type: 'NewBuy',
    category: 'Gpu',
    packageKind: null,
    status: 'Unpaid',
    description: q.lines[0]!.name,
    amount: q.total,
    voucherId: null,
    voucherDeduction: '0',
    payMethod: null,
    paid: [],
    quote: { lines: q.lines, listTotal: q.listTotal, discountTotal: q.discountTotal, voucherDeduction: '0', total: q.total },
    resourceId: null,
    failReason: null,
    expiresAt: new Date(Date.now() + 15 * 60_000).toISOString(),
    paidAt: null,
    fulfilledAt: null,
    refundedAt: null,
    createdAt: new Date().toISOString(),
    ...over,
  };
}

/** A logged-in buyer's world: the user quote (applying the voucher), 600 yuan, one voucher, an empty GPU list. */
function buyerServer(...extra: Handler[]) {
  return catalogueServer(...extra, (url, init) => {
    switch (url.pathname) {
      case '/userapi/api/v2.1/users/me/info':
        return json(200, user);
      case '/billing/api/v1/user/money':
        return json(200, { cash: '5000000', gift: '1000000', voucher: '0', deposit: '0', available: '6000000' });
      case '/order/api/v2.1/vouchers':
        return json(200, { items: [voucher] });
      case '/upgpu/api/v2.1/instances':
        return json(200, { items: [], total: 0, page: 1, pageSize: 10 });
      case `${ORDER_PATH}/pay`:
        return json(200, { orderUid: ORDER_UID, status: 'Unpaid', payment: null });
      case USER_QUOTE: {
        const body = JSON.parse(String(init!.body)) as { cycle: 'Hour' | 'Day'; duration: number; voucherId?: string };
        const q = quoteFor(body.cycle, body.duration);
        if (!body.voucherId) return json(200, q);
        const line = { kind: 'voucher', name: '代金券：新用户代金券', unitPrice: `-${q.total}`, quantity: 1, amount: `-${q.total}` };
        return json(200, { ...q, lines: [...q.lines, line], voucherDeduction: q.total, total: '0', voucherId: body.voucherId });
      }
      default:
        return undefined;
    }
  });
}

/** The bodies of the orders the page created. */
function orderBodies(fetch: ReturnType<typeof catalogueServer>): unknown[] {
  return fetch.mock.calls.filter(([u, i]) => String(u) === GPU_ORDER && i?.method === 'POST').map(([, i]) => JSON.parse(String(i!.body)));
}

const dialogWith = async (text: string) => {
  let found: HTMLElement | undefined;
  await waitFor(() => {
    found = screen.queryAllByRole('dialog').find((d) => d.textContent?.includes(text));
    expect(found).toBeTruthy();
  });
  return found!;
};

/** 立即购买 once it is enabled; answers the 确认订单 dialog. */
async function confirmation() {
  await waitFor(() => expect((screen.getByRole('button', { name: '立即购买' }) as HTMLButtonElement).disabled).toBe(false));
  fireEvent.click(screen.getByRole('button', { name: '立即购买' }));
  return dialogWith('确认订单');
}
