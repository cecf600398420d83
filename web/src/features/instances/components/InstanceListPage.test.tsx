import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { fireEvent, screen, waitFor, within } from '@testing-library/react';
import { allowedActions, orderPath, type Instance, type Quote } from '@console/contract';
import { session } from '../../../session/store';
import { callsTo, json } from '../../../test/http';
import { renderApp } from '../../../test/render';
import { user } from '../../../test/fixtures/user';
import { order } from '../../../test/fixtures/cost';
import { actionPath, ID, ID2, instance, INSTANCES, instanceServer, listOf } from '../../../test/fixtures/instances';

const running = instance();
const stopped = instance({
  id: ID2,
  name: '推理机-2',
  status: 'Stopped',
  actions: allowedActions('Stopped'),
  lastError: '主机 GPU 驱动异常，开机失败',
  startedAt: null,
  stoppedAt: '2026-11-23T11:00:00.000Z',
});

/** The dialog holding `text` (role queries over the whole console are slow in jsdom). */
const dialogOf = async (text: string | RegExp) => (await screen.findAllByText(text)).at(-1)!.closest<HTMLElement>('.ant-modal')!;
const rowOf = async (name: string) => (await screen.findByText(name)).closest<HTMLElement>('tr')!;
const button = (scope: HTMLElement, text: string) => within(scope).getByText(text).closest('button')!;
const filterBys = (fetch: ReturnType<typeof instanceServer>) => callsTo(fetch, INSTANCES).map((c) => c.url.searchParams.get('filterBy'));

async function pick(label: string, option: string) {
  fireEvent.mouseDown(screen.getByLabelText(label));
  await waitFor(() => expect(document.querySelector(`.ant-select-item-option[title="${option}"]`)).toBeTruthy());
  fireEvent.click(document.querySelector(`.ant-select-item-option[title="${option}"]`)!);
}

/** Opens a row's 更多 menu and returns its item labelled `text` (a greyed-out item has its reason under the label). */
async function menuItem(row: HTMLElement, name: string, text: string) {
  fireEvent.click(within(row).getByLabelText(`更多操作 ${name}`));
  const items = await screen.findAllByText(text, { selector: '.ant-dropdown-menu-title-content, .menu-item-label' });
  return items.at(-1)!.closest<HTMLElement>('.ant-dropdown-menu-item')!;
}

beforeEach(() => session.setLogin('tok', user));
afterEach(() => {
  vi.unstubAllGlobals();
  vi.useRealTimers();
});

describe('the GPU instance list', () => {
  it('shows each instance: status in its colour with its Chinese label, OperateFail, config, billing and access', async () => {
    const fetch = instanceServer(listOf(() => [running, stopped]));
    renderApp('/console/gpu-generic');

    const row = await rowOf('训练机-1');
    const status = within(row).getByText('运行中').closest('.ant-tag')!;
    expect(status.classList.contains('ant-tag-success')).toBe(true); // green
    expect(within(row).getByText(ID)).toBeTruthy();
    expect(within(row).getByText('RTX 4090 × 2')).toBeTruthy();
    expect(within(row).getByText('32 核 / 120 GB')).toBeTruthy();
    expect(within(row).getByText('北京 B 区')).toBeTruthy();
    expect(within(row).getByText('按量')).toBeTruthy();
    expect(row.querySelector('.price')!.textContent).toBe('¥3.96/小时');
    expect(within(row).getByText('ssh -p 30022 root@bj-b.gpu.example.com')).toBeTruthy();
    expect(within(row).getByText('JupyterLab').closest('a')!.getAttribute('href')).toBe('https://bj-b.gpu.example.com/jupyter/6f1c7a52');
    expect(within(row).getByText('训练机-1').closest('a')!.getAttribute('href')).toBe(`/console/ipvm/detail/Gpu/${ID}`);

    const other = await rowOf('推理机-2');
    expect(within(other).getByText('已关机').closest('.ant-tag')!.classList.contains('ant-tag-success')).toBe(false); // grey: antd's default
    expect(within(other).getByText('操作失败').closest('.ant-tag')!.classList.contains('ant-tag-error')).toBe(true);
    expect(within(other).queryByText('JupyterLab')).toBeNull(); // web links only while running

    expect(filterBys(fetch)).toEqual(['category,Gpu']);
    const first = callsTo(fetch, INSTANCES)[0]!.url.searchParams;
    expect([first.get('page'), first.get('pageSize')]).toEqual(['1', '10']);
  });

  it('access: the 公钥登录 command and 管理公钥 where the gateway takes keys, nothing of it where it does not', async () => {
    const keyed = instance({ access: { ...running.access!, sshKeyCommand: 'ssh -p 2222 root.6f1c7a52@bj-b.gpu.example.com' } });
    instanceServer(listOf(() => [keyed, stopped]));
    renderApp('/console/gpu-generic');

    const row = await rowOf('训练机-1');
    expect(within(row).getByText('公钥登录')).toBeTruthy();
    // Both commands whole (wrapped, never cut to an ellipsis), each with its copy button.
    for (const command of [running.access!.sshCommand, 'ssh -p 2222 root.6f1c7a52@bj-b.gpu.example.com']) {
      const text = within(row).getByText(command);
      expect(text.className).not.toContain('ellipsis');
      expect(text.querySelector('.ant-typography-copy')).toBeTruthy();
    }
    expect(within(row).getByText('管理公钥').closest('a')!.getAttribute('href')).toBe('/console/account?tab=sshKeys');

    const other = await rowOf('推理机-2');
    expect(within(other).queryByText('公钥登录')).toBeNull();
    expect(within(other).queryByText('管理公钥')).toBeNull();
  });

  it('enables only the actions the server allows now', async () => {
    instanceServer(listOf(() => [running, stopped]));
    renderApp('/console/gpu-generic');

    const on = await rowOf('训练机-1');
    expect(button(on, '开机').disabled).toBe(true);
    expect(button(on, '关机').disabled).toBe(false);
    const disabled = (item: HTMLElement) => item.classList.contains('ant-dropdown-menu-item-disabled');
    expect(disabled(await menuItem(on, '训练机-1', '重启'))).toBe(false);
    expect(disabled(await menuItem(on, '训练机-1', '释放'))).toBe(true);
    expect(disabled(await menuItem(on, '训练机-1', '无卡模式开机'))).toBe(true);

    const off = await rowOf('推理机-2');
    expect(button(off, '开机').disabled).toBe(false);
    expect(button(off, '关机').disabled).toBe(true);
    expect(disabled(await menuItem(off, '推理机-2', '重启'))).toBe(true);
    expect(disabled(await menuItem(off, '推理机-2', '无卡模式开机'))).toBe(false);
    expect(disabled(await menuItem(off, '推理机-2', '释放'))).toBe(false);
  });

  it('does not offer no-card mode on a machine without cards', async () => {
    const cpu = instance({ id: ID2, name: 'CPU-1', status: 'Stopped', actions: allowedActions('Stopped'), gpuCount: 0, gpuName: null });
    instanceServer(listOf(() => [cpu]));
    renderApp('/console/gpu-generic');

    const row = await rowOf('CPU-1');
    await menuItem(row, 'CPU-1', '重启');
    expect(screen.queryByText('无卡模式开机', { selector: '.ant-dropdown-menu-title-content, .menu-item-label' })).toBeNull();
  });

  it('says why a greyed-out 更多 item cannot be used now, and what to do', async () => {
    instanceServer(listOf(() => [running, stopped]));
    renderApp('/console/gpu-generic');

    const on = await rowOf('训练机-1');
    const reason = (item: HTMLElement) => item.querySelector('.menu-item-reason')?.textContent ?? null;
    expect(reason(await menuItem(on, '训练机-1', '释放'))).toBe('运行中的实例不能释放，请先关机');
    expect(reason(await menuItem(on, '训练机-1', '无卡模式开机'))).toBe('实例运行中，请先关机再以无卡模式开机');
    expect(reason(await menuItem(on, '训练机-1', '保存镜像'))).toBe('实例运行中，请先关机再保存镜像');
    expect(reason(await menuItem(on, '训练机-1', '重启'))).toBeNull(); // allowed: no reason

    const off = await rowOf('推理机-2');
    expect(reason(await menuItem(off, '推理机-2', '重启'))).toBe('实例未运行，不能重启');
  });

  it('shows a no-card instance with the reduced CPU and memory it gets in that mode', async () => {
    const noCard = instance({ id: ID2, name: '无卡机', noCard: true });
    instanceServer(listOf(() => [running, noCard]));
    renderApp('/console/gpu-generic');

    const row = await rowOf('无卡机');
    expect(within(row).getByText('无卡模式')).toBeTruthy();
    expect(within(row).getByText('0.5 核 CPU / 2 GB 内存')).toBeTruthy();
    expect(within(row).queryByText('32 核 / 120 GB')).toBeNull();
    // With cards it shows its own size.
    expect(within(await rowOf('训练机-1')).getByText('32 核 / 120 GB')).toBeTruthy();
  });

  it('keeps 地区, 创建时间 and the dates under 计费 at their widths beside the fixed 操作 column: the table scrolls instead', async () => {
    const prepaid = instance({ id: ID2, name: '包日机', cycle: 'Day', expireAt: '2026-11-24T08:56:16.000Z', releaseAt: '2026-12-01T08:56:16.000Z' });
    instanceServer(listOf(() => [prepaid]));
    renderApp('/console/gpu-generic');

    const row = await rowOf('包日机');
    const table = row.closest('table')!;
    const widths = [...table.querySelectorAll('col')].map((c) => parseInt(c.style.width, 10));
    const titles = [...table.querySelectorAll('thead th')].map((th) => th.textContent);
    const width = (title: string) => widths[titles.indexOf(title)]!;
    // The table is as wide as its columns together, so no column gives up width to the fixed ones.
    expect(parseInt(table.style.width, 10)).toBeGreaterThanOrEqual(widths.reduce((a, b) => a + b, 0));
    expect(width('创建时间')).toBeGreaterThanOrEqual(180); // "2026-11-23 16:56:16" on one line
    expect(width('计费')).toBeGreaterThanOrEqual(200); // "2026-12-01 16:56:16 释放" on one line
    expect(width('地区')).toBeGreaterThanOrEqual(100);
    const created = within(row).getByText(/^2026-11-23 \d\d:56:16$/);
    expect(created.style.whiteSpace).toBe('nowrap');
    expect(within(row).getByText(/释放$/).style.whiteSpace).toBe('nowrap');
  });

  it('asks before starting, states the hourly price, then posts the action and refreshes', async () => {
    let started = false;
    const fetch = instanceServer(
      (url, init) => {
        if (url.pathname === actionPath(ID2, 'start') && init?.method === 'POST') {
          started = true;
          return json(200, { ...stopped, status: 'Starting', actions: [] });
        }
        return undefined;
      },
      listOf(() => [running, started ? { ...stopped, status: 'Starting', actions: [] } : stopped]),
    );
    renderApp('/console/gpu-generic');

    fireEvent.click(button(await rowOf('推理机-2'), '开机'));
    const dialog = await dialogOf('确认开机？');
    expect(within(dialog).getByText('开机后按 ¥3.96/小时 计费（按量）')).toBeTruthy();
    expect(callsTo(fetch, actionPath(ID2, 'start'), 'POST')).toHaveLength(0); // nothing before the confirmation

    fireEvent.click(button(dialog, '开机'));
    await waitFor(() => expect(callsTo(fetch, actionPath(ID2, 'start'), 'POST')).toHaveLength(1));
    expect(await screen.findByText('开机中')).toBeTruthy();
    expect(await screen.findByText('操作成功')).toBeTruthy();
  });

  it('states what stopping keeps charging, and what releasing destroys (with a danger button)', async () => {
    const fetch = instanceServer(
      (url, init) =>
        url.pathname === actionPath(ID2, 'release') && init?.method === 'POST' ? json(200, { ...stopped, status: 'Deleting', actions: [] }) : undefined,
      listOf(() => [running, stopped]),
    );
    renderApp('/console/gpu-generic');

    fireEvent.click(button(await rowOf('训练机-1'), '关机'));
    const stop = await dialogOf('确认关机？');
    expect(within(stop).getByText('关机后停止 GPU 计费；超出免费部分的数据盘仍按 ¥0.35/天 按小时计费')).toBeTruthy();
    fireEvent.click(button(stop, '取消'));
    expect(callsTo(fetch, actionPath(ID, 'stop'), 'POST')).toHaveLength(0);

    fireEvent.click(await menuItem(await rowOf('推理机-2'), '推理机-2', '释放'));
    const release = await dialogOf('确认释放实例「推理机-2」？');
    expect(within(release).getByText('释放后数据盘和系统盘的数据将被清除且无法恢复')).toBeTruthy();
    const ok = button(release, '确认释放');
    expect(ok.classList.contains('ant-btn-dangerous')).toBe(true);
    fireEvent.click(ok);
    await waitFor(() => expect(callsTo(fetch, actionPath(ID2, 'release'), 'POST')).toHaveLength(1));
  });

  it('when the GPUs are taken, offers to start in no-card mode with its price', async () => {
    const fetch = instanceServer(
      (url, init) => {
        if (init?.method !== 'POST') return undefined;
        if (url.pathname === actionPath(ID2, 'start')) return json(409, { code: 40920002, message: '该主机的 GPU 已被占用，可选择无卡模式开机，或稍后再试' });
        if (url.pathname === actionPath(ID2, 'startNoCard')) return json(200, { ...stopped, status: 'Starting', noCard: true, actions: [] });
        return undefined;
      },
      listOf(() => [stopped]),
    );
    renderApp('/console/gpu-generic');

    fireEvent.click(button(await rowOf('推理机-2'), '开机'));
    fireEvent.click(button(await dialogOf('确认开机？'), '开机'));
    const failed = await dialogOf('开机失败');
    expect(within(failed).getByText(/该主机的 GPU 已被占用/)).toBeTruthy();
    expect(within(failed).getByText(/无卡模式不挂载 GPU，只分配 0\.5 核 CPU \/ 2 GB 内存，按 ¥0\.10\/小时 计费，适合上传数据、配置环境/)).toBeTruthy();
    fireEvent.click(button(failed, '无卡模式开机'));
    await waitFor(() => expect(callsTo(fetch, actionPath(ID2, 'startNoCard'), 'POST')).toHaveLength(1));
  });

  it('when the GPUs are taken, also offers to migrate to another host: free, taking minutes, to a host with free cards', async () => {
    const targets = [
      { hostId: 'h2', hostName: 'BJ-B-1-A02', roomName: '北京 B 区 1 号机房', sameRoom: true, gpuFree: 0, available: false },
      { hostId: 'h3', hostName: 'BJ-B-2-A01', roomName: '北京 B 区 2 号机房', sameRoom: false, gpuFree: 4, available: true },
    ];
    const fetch = instanceServer(
      (url, init) => {
        if (url.pathname === `${actionPath(ID2, 'migrate')}/targets`) return json(200, targets);
        if (init?.method !== 'POST') return undefined;
        if (url.pathname === actionPath(ID2, 'start'))
          return json(409, { code: 40920002, message: '该主机的 GPU 已被占用，可迁移到其他主机（免费）、选择无卡模式开机，或稍后再试' });
        if (url.pathname === actionPath(ID2, 'migrate')) return json(200, { ...stopped, status: 'Pending_Migrate', actions: [], tasks: [] });
        return undefined;
      },
      listOf(() => [stopped]),
    );
    renderApp('/console/gpu-generic');

    fireEvent.click(button(await rowOf('推理机-2'), '开机'));
    fireEvent.click(button(await dialogOf('确认开机？'), '开机'));
    const failed = await dialogOf('开机失败');
    expect(button(failed, '无卡模式开机')).toBeTruthy();
    fireEvent.click(button(failed, '迁移到其他主机'));
    const dialog = await dialogOf('迁移到其他主机「推理机-2」');
    expect(within(dialog).getByText(/数据盘数据将迁移.*需要几分钟.*迁移免费/)).toBeTruthy();
    // A host without free cards is listed but cannot be chosen; the server picks unless one is chosen.
    await within(dialog).findByText('BJ-B-2-A01');
    expect(within(dialog).getByText('BJ-B-1-A02').closest('label')!.className).toContain('disabled');
    expect(within(dialog).getByText('空闲 0 卡（需 2 卡）')).toBeTruthy();
    fireEvent.click(within(dialog).getByText('BJ-B-2-A01'));
    expect(callsTo(fetch, actionPath(ID2, 'migrate'), 'POST')).toHaveLength(0);
    fireEvent.click(button(dialog, '确认迁移'));
    await waitFor(() => expect(callsTo(fetch, actionPath(ID2, 'migrate'), 'POST').map((c) => c.body)).toEqual([{ hostId: 'h3' }]));
    expect(callsTo(fetch, actionPath(ID2, 'startNoCard'), 'POST')).toHaveLength(0);
  });

  it('says so when no host has free cards to migrate to, and does not migrate', async () => {
    const fetch = instanceServer(
      (url) => {
        if (url.pathname === `${actionPath(ID2, 'migrate')}/targets`)
          return json(200, [{ hostId: 'h2', hostName: 'BJ-B-1-A02', roomName: '1 号机房', sameRoom: true, gpuFree: 0, available: false }]);
        return undefined;
      },
      listOf(() => [stopped]),
    );
    renderApp('/console/gpu-generic');
    fireEvent.click(within(await rowOf('推理机-2')).getByLabelText('更多操作 推理机-2'));
    fireEvent.click((await screen.findAllByText('迁移', { selector: '.ant-dropdown-menu-title-content' })).at(-1)!);
    const dialog = await dialogOf('迁移到其他主机「推理机-2」');
    expect(await within(dialog).findByText(/同地区暂无空闲 2 卡的 RTX 4090 主机/)).toBeTruthy();
    expect(button(dialog, '确认迁移').disabled).toBe(true);
    expect(callsTo(fetch, actionPath(ID2, 'migrate'), 'POST')).toHaveLength(0);
  });

  it('in arrears, offers to recharge instead of a bare error', async () => {
    instanceServer(
      (url, init) =>
        url.pathname === actionPath(ID2, 'start') && init?.method === 'POST'
          ? json(400, { code: 40011002, message: '账户欠费，请先充值结清后再开机' })
          : undefined,
      listOf(() => [stopped]),
    );
    const router = renderApp('/console/gpu-generic');
    fireEvent.click(button(await rowOf('推理机-2'), '开机'));
    fireEvent.click(button(await dialogOf('确认开机？'), '开机'));
    const dialog = await dialogOf('账户欠费，请先充值结清后再开机');
    fireEvent.click(button(dialog, '去充值'));
    await waitFor(() => expect(router.state.location.pathname).toBe('/console/recharge'));
  });

  it('refreshes itself every 2 s while a row is mid-operation, and stops once all are settled', async () => {
    vi.useFakeTimers({ shouldAdvanceTime: true, toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval'] });
    let rows: Instance[] = [{ ...running, status: 'Starting', actions: [] }];
    const fetch = instanceServer(listOf(() => rows));
    renderApp('/console/gpu-generic');
    await screen.findByText('开机中');
    const lists = () => callsTo(fetch, INSTANCES).length;
    expect(lists()).toBe(1);

    await vi.advanceTimersByTimeAsync(2100);
    await waitFor(() => expect(lists()).toBe(2));

    rows = [running];
    await vi.advanceTimersByTimeAsync(2100);
    await waitFor(() => expect(lists()).toBe(3));
    expect(await screen.findByText('运行中')).toBeTruthy();

    await vi.advanceTimersByTimeAsync(6000);
    expect(lists()).toBe(3); // settled: no more polling
  });

  it('keeps the header balance following the charges while a post-paid instance runs', async () => {
    vi.useFakeTimers({ shouldAdvanceTime: true, toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval'] });
    const fetch = instanceServer(listOf(() => [running]));
    renderApp('/console/gpu-generic');
    await rowOf('训练机-1');
    const balances = () => callsTo(fetch, '/billing/api/v1/user/money').length;
    const before = balances();
    await vi.advanceTimersByTimeAsync(61_000);
    await waitFor(() => expect(balances()).toBeGreaterThan(before));
  });

  it('filters by status and search through the URL, as one filterBy string', async () => {
    const fetch = instanceServer(listOf(() => [running]));
    const router = renderApp('/console/gpu-generic');
    await rowOf('训练机-1');

    await pick('实例状态', '运行中');
    await waitFor(() => expect(filterBys(fetch).at(-1)).toBe('category,Gpu,status,Running'));
    expect(new URLSearchParams(router.state.location.search).get('status')).toBe('Running');

    const search = screen.getByLabelText('搜索实例');
    fireEvent.change(search, { target: { value: '训练' } });
    fireEvent.keyDown(search, { key: 'Enter', code: 'Enter', keyCode: 13 });
    await waitFor(() => expect(callsTo(fetch, INSTANCES).at(-1)!.url.searchParams.get('search')).toBe('训练'));
    expect(new URLSearchParams(router.state.location.search).get('search')).toBe('训练');
  });

  it('renames from the row menu (30 characters at most)', async () => {
    const fetch = instanceServer(
      (url, init) => (url.pathname === `${INSTANCES}/${ID}/name` && init?.method === 'PUT' ? json(200, { ...running, name: '新名字' }) : undefined),
      listOf(() => [running]),
    );
    renderApp('/console/gpu-generic');
    fireEvent.click(await menuItem(await rowOf('训练机-1'), '训练机-1', '重命名'));
    const dialog = await dialogOf('修改实例名称');
    const input = within(dialog).getByLabelText('实例名称') as HTMLInputElement;
    expect(input.maxLength).toBe(30);
    fireEvent.change(input, { target: { value: '新名字' } });
    fireEvent.click(button(dialog, '保存'));
    await waitFor(() => expect(callsTo(fetch, `${INSTANCES}/${ID}/name`, 'PUT').map((c) => c.body)).toEqual([{ name: '新名字' }]));
  });

  it('hands an instance to a child granted 管理 GPU 实例, offering only such children', async () => {
    const child = (id: string, childName: string, gpu: boolean) => ({
      id,
      childName,
      remark: '',
      disabled: false,
      permissions: { createGPUInstance: false, createImageAPP: false, openYunBucket: false, gpu, app: false, image: false, usingLLM: !gpu, finance: false },
      createdAt: '2026-11-23T00:00:00.000Z',
      lastLoginAt: null,
      spendLimit: null,
      spent: { month: '0', total: '0' },
    });
    const KID = '5d6e7f80-1a2b-4c3d-8e9f-0a1b2c3d4e5f';
    let current = running;
    const fetch = instanceServer(
      (url) =>
        url.pathname === '/userapi/api/v2.1/children'
          ? json(200, {
              items: [child(KID, 'gpu_ops', true), child('7e8f9a0b-1c2d-4e3f-8a9b-0c1d2e3f4a5b', 'llm_only', false)],
              total: 2,
              page: 1,
              pageSize: 100,
            })
          : undefined,
      (url, init) => {
        if (url.pathname !== `${INSTANCES}/${ID}/holder` || init?.method !== 'PUT') return undefined;
        current = { ...running, holderId: KID };
        return json(200, current);
      },
      listOf(() => [current]),
    );
    renderApp('/console/gpu-generic');
    fireEvent.click(await menuItem(await rowOf('训练机-1'), '训练机-1', '交给子账号'));
    const dialog = await dialogOf('交给子账号管理');
    fireEvent.mouseDown(within(dialog).getByLabelText('管理该实例的账号'));
    await waitFor(() => expect(document.querySelector('.ant-select-item-option[title="gpu_ops"]')).toBeTruthy());
    expect(document.querySelector('.ant-select-item-option[title="llm_only"]')).toBeNull(); // not granted to manage GPU instances
    fireEvent.click(document.querySelector('.ant-select-item-option[title="gpu_ops"]')!);
    fireEvent.click(button(dialog, '确定'));
    await waitFor(() => expect(callsTo(fetch, `${INSTANCES}/${ID}/holder`, 'PUT').map((c) => c.body)).toEqual([{ childId: KID }]));
    // The list then says which child manages it.
    expect(await within(await rowOf('训练机-1')).findByText('子账号 gpu_ops 管理')).toBeTruthy();
  });
});

describe('the other instance lists', () => {
  it('an empty CPU list offers to buy one, on the purchase page for its category', async () => {
    const fetch = instanceServer();
    renderApp('/console/generic/cpu');
    expect(await screen.findByText('您还没有 CPU 实例')).toBeTruthy();
    expect(screen.getByText('立即创建').closest('a')!.getAttribute('href')).toBe('/stats/purchase?category=Generic');
    expect(filterBys(fetch)).toEqual(['category,Generic']);
  });

  it('an empty image-application list links to the GPU purchase page', async () => {
    const fetch = instanceServer();
    renderApp('/console/app');
    expect(await screen.findByText('您还没有镜像应用')).toBeTruthy();
    expect(screen.getByText('立即创建').closest('a')!.getAttribute('href')).toBe('/stats/purchase');
    expect(filterBys(fetch)).toEqual(['category,App']);
  });

  it('a failed load says so and retries', async () => {
    let fail = true;
    instanceServer((url) => (url.pathname === INSTANCES && fail ? json(500, { code: 50000001, message: '服务器开了个小差，请稍后重试' }) : undefined));
    renderApp('/console/desktop');
    expect(await screen.findByText('加载失败')).toBeTruthy();
    fail = false;
    fireEvent.click(screen.getByText('重试'));
    expect(await screen.findByText('您还没有云桌面')).toBeTruthy();
  });
});

describe('renewing a prepaid instance', () => {
  const EXPIRE = '2099-01-10T12:00:00.000Z';
  const prepaid = instance({ id: ID2, name: '包月机-2', cycle: 'Month', status: 'Stopped', actions: allowedActions('Stopped'), expireAt: EXPIRE });
  const RENEW = `${INSTANCES}/${ID2}/renew`;
  const PRICE = `${RENEW}/price`;
  const ORDER_UID = 'O20261123085616abcd0042';
  const renewOrder = order({ orderUid: ORDER_UID, kind: 'Personal', type: 'Renew', category: 'Gpu', description: '续费 包月机-2（3 月）', amount: '840000' });
  const quote = (duration: number): Quote => ({
    category: 'Gpu',
    cycle: 'Month',
    duration,
    unit: '月',
    lines: [
      { kind: 'compute', name: `RTX 4090 × 2（${duration} 月）`, unitPrice: '400000', quantity: duration, amount: String(400000 * duration) },
      { kind: 'cycleDiscount', name: '月付优惠（0.7）', unitPrice: String(-120000 * duration), quantity: 1, amount: String(-120000 * duration) },
    ],
    listTotal: String(400000 * duration),
    discountTotal: String(120000 * duration),
    voucherDeduction: '0',
    total: String(280000 * duration),
    placement: { regionId: 'bj-b' },
    discountRate: '0.7',
  });
  const renewServer = (extra?: Parameters<typeof instanceServer>[0]) =>
    instanceServer(
      ...(extra ? [extra] : []),
      (url, init) => {
        if (init?.method !== 'POST') return undefined;
        const body = JSON.parse(String(init.body ?? '{}')) as { duration: number };
        if (url.pathname === PRICE) return json(200, quote(body.duration));
        if (url.pathname === RENEW) return json(200, renewOrder);
        if (url.pathname === orderPath('Personal', ORDER_UID, '/pay')) return json(200, { orderUid: ORDER_UID, status: 'Success', payment: null });
        return undefined;
      },
      (url) => (url.pathname === orderPath('Personal', ORDER_UID, '/pay') ? json(200, { orderUid: ORDER_UID, status: 'Unpaid', payment: null }) : undefined),
      listOf(() => [running, prepaid]),
    );

  it('is offered only for prepaid instances', async () => {
    renewServer();
    renderApp('/console/gpu-generic');
    expect(await menuItem(await rowOf('包月机-2'), '包月机-2', '续费')).toBeTruthy();
    fireEvent.click(within(await rowOf('训练机-1')).getByLabelText('更多操作 训练机-1'));
    await screen.findAllByText('重命名', { selector: '.ant-dropdown-menu-title-content' });
    const menus = [...document.querySelectorAll<HTMLElement>('.ant-dropdown:not(.ant-dropdown-hidden)')];
    expect(menus.at(-1)!.textContent).not.toContain('续费'); // post-paid: nothing to renew
  });

  it('quotes the chosen duration, posts { duration }, and pays the order in the pay dialog', async () => {
    const fetch = renewServer();
    renderApp('/console/gpu-generic');
    fireEvent.click(await menuItem(await rowOf('包月机-2'), '包月机-2', '续费'));
    const dialog = await dialogOf('续费实例「包月机-2」');
    await waitFor(() => expect(within(dialog).getByTestId('renew-total').textContent).toBe('¥28.00'));
    expect(within(dialog).getByText('月')).toBeTruthy(); // the instance's own unit
    expect(within(dialog).getByTestId('renew-expiry').textContent).toMatch(/^2099-02-09 /); // expireAt + 30 days

    const input = within(dialog).getByLabelText('续费时长');
    fireEvent.change(input, { target: { value: '3' } });
    await waitFor(() => expect(within(dialog).getByTestId('renew-total').textContent).toBe('¥84.00'));
    expect(callsTo(fetch, PRICE, 'POST').at(-1)!.body).toEqual({ duration: 3 });
    expect(within(dialog).getByTestId('renew-expiry').textContent).toMatch(/^2099-04-10 /);

    fireEvent.click(button(dialog, '确认续费'));
    await waitFor(() => expect(callsTo(fetch, RENEW, 'POST').map((c) => c.body)).toEqual([{ duration: 3 }]));
    const pay = await dialogOf('支付订单');
    expect(within(pay).getByText(new RegExp(ORDER_UID))).toBeTruthy();

    const lists = callsTo(fetch, INSTANCES).length;
    fireEvent.click(await within(pay).findByRole('button', { name: '余额支付 ¥84.00' }));
    fireEvent.click(within(await dialogOf('确认支付 ¥84.00')).getByRole('button', { name: '确认支付' }));
    expect(await screen.findByText('续费成功')).toBeTruthy();
    await waitFor(() => expect(callsTo(fetch, INSTANCES).length).toBeGreaterThan(lists));
  });

  it('when an expired instance cannot start, offers to renew it', async () => {
    renewServer((url, init) =>
      url.pathname === actionPath(ID2, 'start') && init?.method === 'POST' ? json(400, { code: 40020011, message: '实例已到期，请先续费再开机' }) : undefined,
    );
    renderApp('/console/gpu-generic');
    fireEvent.click(button(await rowOf('包月机-2'), '开机'));
    fireEvent.click(button(await dialogOf('确认开机？'), '开机'));
    const failed = await dialogOf('实例已到期，请先续费再开机');
    fireEvent.click(button(failed, '续费'));
    const dialog = await dialogOf('续费实例「包月机-2」');
    await waitFor(() => expect(within(dialog).getByTestId('renew-total').textContent).toBe('¥28.00'));
  });
});
