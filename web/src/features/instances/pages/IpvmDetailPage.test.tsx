import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { fireEvent, screen, waitFor, within } from '@testing-library/react';
import { allowedActions, allowedTasks } from '@console/contract';
import { session } from '../../../session/store';
import { callsTo, json, page } from '../../../test/http';
import { renderApp } from '../../../test/render';
import { user } from '../../../test/fixtures/user';
import { actionPath, ID, instance, INSTANCES, instanceServer, LOGS, operation } from '../../../test/fixtures/instances';

const ONE = `${INSTANCES}/${ID}`;
const DETAIL = `/console/ipvm/detail/Gpu/${ID}`;
const button = (scope: HTMLElement, text: string) => within(scope).getByText(text).closest('button')!;
const dialogOf = async (text: string | RegExp) => (await screen.findAllByText(text)).at(-1)!.closest<HTMLElement>('.ant-modal')!;

beforeEach(() => session.setLogin('tok', user));
afterEach(() => vi.unstubAllGlobals());

describe('the instance detail page', () => {
  it('overview: status, configuration, host, image, times and the actions allowed now', async () => {
    instanceServer((url) => (url.pathname === ONE ? json(200, instance({ lastError: '重启超时，已恢复运行' })) : undefined));
    renderApp(DETAIL);

    expect(await screen.findByRole('heading', { name: '训练机-1' })).toBeTruthy();
    expect(screen.getAllByText('运行中').length).toBeGreaterThan(0);
    expect(screen.getAllByText('操作失败').length).toBeGreaterThan(0);
    expect(screen.getByText('重启超时，已恢复运行')).toBeTruthy();
    expect(screen.getByText('RTX 4090 × 2')).toBeTruthy();
    expect(screen.getByText('BJ-B-1-A01')).toBeTruthy();
    expect(screen.getByText('PyTorch 2.3.0')).toBeTruthy();
    expect(screen.getByText('100 GB（免费 50 GB）')).toBeTruthy();
    expect(screen.getAllByText(/^2026-11-23 \d\d:\d\d:\d\d$/).length).toBe(2); // created, started
    expect(screen.getByText('O20261123085616aaaa0009').closest('a')!.getAttribute('href')).toBe(
      '/console/cost/bill/server-details/O20261123085616aaaa0009?kind=Personal',
    );

    const header = screen.getByRole('heading', { name: '训练机-1' }).closest<HTMLElement>('.ant-card')!;
    expect(button(header, '开机').disabled).toBe(true);
    expect(button(header, '无卡模式开机').disabled).toBe(true);
    expect(button(header, '释放').disabled).toBe(true);
    expect(button(header, '关机').disabled).toBe(false);
    expect(button(header, '重启').disabled).toBe(false);
    expect(screen.getByText('返回列表').closest('a')!.getAttribute('href')).toBe('/console/gpu-generic');
  });

  it('restarts after a confirmation, and polls while the restart is under way', async () => {
    let restarted = false;
    const fetch = instanceServer((url, init) => {
      if (url.pathname === actionPath(ID, 'restart') && init?.method === 'POST') {
        restarted = true;
        return json(200, instance({ status: 'Restarting', actions: [] }));
      }
      if (url.pathname === ONE) return json(200, restarted ? instance({ status: 'Restarting', actions: [] }) : instance());
      return undefined;
    });
    renderApp(DETAIL);
    const header = (await screen.findByRole('heading', { name: '训练机-1' })).closest<HTMLElement>('.ant-card')!;
    fireEvent.click(button(header, '重启'));
    const dialog = await dialogOf('确认重启？');
    fireEvent.click(button(dialog, '重启'));
    await waitFor(() => expect(callsTo(fetch, actionPath(ID, 'restart'), 'POST')).toHaveLength(1));
    expect((await screen.findAllByText('重启中')).length).toBeGreaterThan(0);
    const gets = callsTo(fetch, ONE).length;
    await waitFor(() => expect(callsTo(fetch, ONE).length).toBeGreaterThan(gets), { timeout: 4000 });
  });

  it('access tab: the SSH command, the password hidden until asked, and JupyterLab', async () => {
    instanceServer((url) => (url.pathname === ONE ? json(200, instance()) : undefined));
    renderApp(`${DETAIL}?tab=access`);
    expect(await screen.findByText('ssh -p 30022 root@bj-b.gpu.example.com')).toBeTruthy();
    expect(screen.queryByText('Pw0rd-abc123')).toBeNull();
    fireEvent.click(screen.getByText('显示'));
    expect(screen.getByText('Pw0rd-abc123')).toBeTruthy();
    expect(screen.getByText('30022')).toBeTruthy();
    expect(screen.getByText('打开 JupyterLab').closest('a')!.getAttribute('href')).toBe('https://bj-b.gpu.example.com/jupyter/6f1c7a52');
  });

  it('access tab: the 公钥登录 command and a link to manage the keys, when the gateway takes keys', async () => {
    const access = { ...instance().access!, sshKeyCommand: 'ssh -p 2222 root.6f1c7a52@bj-b.gpu.example.com' };
    instanceServer((url) => (url.pathname === ONE ? json(200, instance({ access })) : undefined));
    renderApp(`${DETAIL}?tab=access`);
    expect(await screen.findByText('ssh -p 2222 root.6f1c7a52@bj-b.gpu.example.com')).toBeTruthy();
    expect(screen.getByText('公钥登录')).toBeTruthy();
    expect(screen.getByText('管理公钥').closest('a')!.getAttribute('href')).toBe('/console/account?tab=sshKeys');
    expect(screen.getByText('ssh -p 30022 root@bj-b.gpu.example.com')).toBeTruthy();
  });

  it('access tab: no 公钥登录 line when the gateway takes no keys', async () => {
    instanceServer((url) => (url.pathname === ONE ? json(200, instance({ access: { ...instance().access!, sshKeyCommand: null } })) : undefined));
    renderApp(`${DETAIL}?tab=access`);
    expect(await screen.findByText('ssh -p 30022 root@bj-b.gpu.example.com')).toBeTruthy();
    expect(screen.queryByText('公钥登录')).toBeNull();
    expect(screen.queryByText('管理公钥')).toBeNull();
  });

  it('billing tab: hourly prices of a post-paid instance, and the release warning', async () => {
    instanceServer((url) =>
      url.pathname === ONE
        ? json(200, instance({ status: 'Stopped', actions: allowedActions('Stopped'), access: null, releaseAt: '2026-11-30T08:00:00.000Z' }))
        : undefined,
    );
    renderApp(`${DETAIL}?tab=billing`);
    const panel = (await screen.findByText('按量（按小时后付费）')).closest<HTMLElement>('.ant-descriptions')!;
    const prices = [...panel.querySelectorAll('.price')].map((p) => p.textContent);
    expect(prices).toEqual(['¥3.96/小时', '¥0.10/小时', '¥0.35/天']);
    expect(screen.getAllByText(/^该实例将于 2026-11-30 \d\d:\d\d:\d\d 自动释放$/).length).toBeGreaterThan(0);
    expect(screen.queryByText('续费')).toBeNull(); // post-paid: nothing to renew
  });

  it('billing tab: a machine without cards has no no-card price', async () => {
    const cpu = instance({
      category: 'Generic',
      gpuTypeId: null,
      gpuName: null,
      gpuCount: 0,
      hourlyPrice: '3000',
      status: 'Stopped',
      actions: allowedActions('Stopped'),
      access: null,
    });
    instanceServer((url) => (url.pathname === `${INSTANCES}/${ID}` ? json(200, cpu) : undefined));
    renderApp(`/console/ipvm/detail/Generic/${ID}?tab=billing`);
    const panel = (await screen.findByText('按量（按小时后付费）')).closest<HTMLElement>('.ant-descriptions')!;
    expect([...panel.querySelectorAll('.price')].map((p) => p.textContent)).toEqual(['¥0.30/小时', '¥0.35/天']);
    expect(within(panel).queryByText('无卡模式价格')).toBeNull();
  });

  it('billing tab: the expiry of a prepaid instance, and renewing it by the week', async () => {
    const quote = {
      category: 'Gpu',
      cycle: 'Week',
      duration: 2,
      unit: '周',
      lines: [{ kind: 'compute', name: 'RTX 4090 × 2（2 周）', unitPrice: '500000', quantity: 2, amount: '1000000' }],
      listTotal: '1000000',
      discountTotal: '0',
      voucherDeduction: '0',
      total: '1000000',
      placement: { regionId: 'bj-b' },
      discountRate: '1',
    };
    const fetch = instanceServer((url, init) => {
      if (url.pathname === ONE) return json(200, instance({ cycle: 'Week', expireAt: '2026-12-23T08:00:00.000Z' }));
      if (url.pathname === `${ONE}/renew/price` && init?.method === 'POST') return json(200, quote);
      return undefined;
    });
    renderApp(`${DETAIL}?tab=billing`);
    expect(await screen.findByText('按周（包周期，预付费）')).toBeTruthy();
    const expiry = screen.getByText(/^2026-12-23 \d\d:\d\d:\d\d$/).closest<HTMLElement>('.ant-descriptions-item')!;
    fireEvent.click(button(expiry, '续费'));
    const dialog = await dialogOf('续费实例「训练机-1」');
    expect(within(dialog).getByText('周')).toBeTruthy();
    fireEvent.change(within(dialog).getByLabelText('续费时长'), { target: { value: '2' } });
    await waitFor(() => expect(within(dialog).getByTestId('renew-total').textContent).toBe('¥100.00'));
    expect(callsTo(fetch, `${ONE}/renew/price`, 'POST').at(-1)!.body).toEqual({ duration: 2 });
  });

  it('log tab: this instance’s operations, with status labels', async () => {
    const fetch = instanceServer((url) => {
      if (url.pathname === ONE) return json(200, instance());
      if (url.pathname === LOGS) return json(200, page([operation({ detail: '用户关机' })], url));
      return undefined;
    });
    renderApp(`${DETAIL}?tab=log`);
    const row = (await screen.findByText('用户关机')).closest<HTMLElement>('tr')!;
    expect(within(row).getByText('关机')).toBeTruthy();
    expect(within(row).getByText('13800138000')).toBeTruthy();
    expect(within(row).getByText('运行中')).toBeTruthy();
    expect(within(row).getByText('关机中')).toBeTruthy();
    expect(callsTo(fetch, LOGS).map((c) => c.url.searchParams.get('filterBy'))).toEqual([`instance,${ID}`]);
    expect(screen.getByText('在操作日志中查看').closest('a')!.getAttribute('href')).toBe(`/console/log?instance=${ID}`);
  });

  it('renames, and resets the password showing the new one', async () => {
    let name = '训练机-1';
    const fetch = instanceServer((url, init) => {
      if (url.pathname === `${ONE}/name` && init?.method === 'PUT') {
        name = (JSON.parse(String(init.body)) as { name: string }).name;
        return json(200, instance({ name }));
      }
      if (url.pathname === `${ONE}/password` && init?.method === 'PUT') {
        return json(200, instance({ name, access: { ...instance().access!, sshPassword: 'New-Pass-789' } }));
      }
      if (url.pathname === ONE) return json(200, instance({ name }));
      return undefined;
    });
    renderApp(DETAIL);
    await screen.findByRole('heading', { name: '训练机-1' });

    fireEvent.click(screen.getByLabelText('修改名称'));
    const rename = await dialogOf('修改实例名称');
    const input = within(rename).getByLabelText('实例名称');
    fireEvent.change(input, { target: { value: '   ' } });
    fireEvent.click(button(rename, '保存'));
    expect(await within(rename).findByText('请输入实例名称')).toBeTruthy();
    fireEvent.change(input, { target: { value: ' 推理服务 ' } });
    fireEvent.click(button(rename, '保存'));
    expect(await screen.findByRole('heading', { name: '推理服务' })).toBeTruthy();
    expect(callsTo(fetch, `${ONE}/name`, 'PUT').map((c) => c.body)).toEqual([{ name: '推理服务' }]);

    fireEvent.click(button(screen.getByRole('heading', { name: '推理服务' }).closest<HTMLElement>('.ant-card')!, '重置密码'));
    fireEvent.click(button(await dialogOf('重置 SSH 登录密码？'), '重置密码'));
    const done = await dialogOf('密码已重置');
    expect(within(done).getByText('New-Pass-789')).toBeTruthy();
    expect(callsTo(fetch, `${ONE}/password`, 'PUT')).toHaveLength(1);
  });

  it('an instance that does not exist (or was released) says so', async () => {
    instanceServer();
    renderApp(DETAIL);
    expect(await screen.findByText('实例不存在或已释放')).toBeTruthy();
    expect(screen.getByText('返回实例列表').closest('a')!.getAttribute('href')).toBe('/console/gpu-generic');
  });

  it('a link with another type shows the instance under its own category', async () => {
    instanceServer((url) => (url.pathname === ONE ? json(200, instance({ category: 'Generic', gpuName: null, gpuCount: 0 })) : undefined));
    const router = renderApp(`/console/ipvm/detail/gpu/${ID}?tab=access`);
    await waitFor(() => expect(router.state.location.pathname).toBe(`/console/ipvm/detail/Generic/${ID}`));
    expect(router.state.location.search).toBe('?tab=access');
    expect((await screen.findByText('返回列表')).closest('a')!.getAttribute('href')).toBe('/console/generic/cpu');
  });

  it('data disk tab: size and cost; 扩容 waits for a stop; saving an image of a stopped instance names it', async () => {
    let status: 'Running' | 'Stopped' = 'Running';
    const fetch = instanceServer((url, init) => {
      if (url.pathname === `${ONE}/image` && init?.method === 'POST') {
        return json(409, { code: 40921001, message: '已有同名镜像，请换一个名称', detail: '镜像「基础环境」已存在' });
      }
      if (url.pathname === '/upgpu/api/v2.1/images') return json(200, { ...page([], url), limit: 10, used: 3 });
      if (url.pathname === ONE) return json(200, instance({ status, actions: allowedActions(status), tasks: allowedTasks(status) }));
      return undefined;
    });
    renderApp(`${DETAIL}?tab=disk`);
    expect((await screen.findByTestId('disk-size')).textContent).toBe('100 GB');
    const pane = screen.getByText('数据盘容量').closest<HTMLElement>('[role="tabpanel"]')!;
    expect([...pane.querySelectorAll('.price')].map((p) => p.textContent)).toEqual(['¥0.35/天']);
    expect(within(pane).getAllByText('50 GB')).toHaveLength(2); // free, and chargeable: 100 GB less the free 50 GB
    expect(within(pane).getByText('实例运行中，请先关机再数据盘扩容')).toBeTruthy();
    expect(button(pane, '扩容').disabled).toBe(true);
    const header = screen.getByRole('heading', { name: '训练机-1' }).closest<HTMLElement>('.ant-card')!;
    expect(button(header, '保存镜像').disabled).toBe(true);

    status = 'Stopped';
    fireEvent.click(button(header, '关机'));
    fireEvent.click(button(await dialogOf('确认关机？'), '关机'));
    await waitFor(() => expect(button(header, '保存镜像').disabled).toBe(false), { timeout: 6000 });
    fireEvent.click(button(header, '保存镜像'));
    const dialog = await dialogOf('保存镜像「训练机-1」');
    expect(await within(dialog).findByText(/镜像免费保存，每个账号最多 10 个（已有 3 个）/)).toBeTruthy();
    fireEvent.change(within(dialog).getByLabelText('镜像名称'), { target: { value: '基础环境' } });
    fireEvent.click(button(dialog, '保存镜像'));
    expect(await within(dialog).findByText('已有同名镜像，请换一个名称：镜像「基础环境」已存在')).toBeTruthy();
    expect(callsTo(fetch, `${ONE}/image`, 'POST').map((c) => c.body)).toEqual([{ name: '基础环境' }]);
  });
});
