import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { fireEvent, screen, waitFor, within } from '@testing-library/react';
import type { OperatorImage, OperatorImageList } from '@console/contract';
import { session } from '../../../session/store';
import { callsTo, json } from '../../../test/http';
import { renderApp } from '../../../test/render';
import { user } from '../../../test/fixtures/user';
import { costServer } from '../../../test/fixtures/cost';

const operator = { ...user, id: 'op1', mobile: '13800000000', isOperator: true };
const LIST = '/api/v1/operator/images';

const pytorch: OperatorImage = {
  id: 'reg-ai-pytorch-2-3',
  reference: 'registry.example.com/ai/pytorch:2.3',
  digest: `sha256:${'a'.repeat(64)}`,
  name: 'PyTorch 2.3 · CUDA 12.1',
  kind: 'system',
  description: '',
  categories: ['Gpu'],
  port: null,
  minGpuMemoryGb: 0,
  command: '',
  source: 'registry',
  ready: true,
  problem: null,
  inUse: 2,
  createdAt: '2026-11-23T08:00:00.000Z',
};

/** The registration endpoints over a list that a registration or a removal really changes; `missing` references are refused as the server does. */
function imageServer(start: OperatorImage[] = [], opts: { fail?: boolean } = {}) {
  let items = structuredClone(start);
  return costServer((url, init) => {
    const method = init?.method ?? 'GET';
    if (url.pathname === '/userapi/api/v2.1/users/me/info') return json(200, operator);
    if (url.pathname === LIST && method === 'GET') {
      if (opts.fail) return json(500, { code: 50000001, message: '服务器开了个小差，请稍后重试' });
      return json(200, { items, registry: 'https://registry.example.com' } satisfies OperatorImageList);
    }
    if (url.pathname === LIST && method === 'POST') {
      const body = JSON.parse(String(init!.body)) as Pick<OperatorImage, 'reference' | 'name' | 'kind' | 'port' | 'minGpuMemoryGb' | 'command'>;
      if (body.reference.includes('absent')) {
        return json(400, { code: 40033001, message: '找不到该镜像：请先把它推送到镜像仓库（未配置 REGISTRY_URL 时导入本机镜像目录），核对地址与标签后再登记' });
      }
      const image: OperatorImage = { ...pytorch, ...body, id: 'reg-new', inUse: 0, ready: false };
      items = [...items, image];
      return json(200, image);
    }
    if (url.pathname.startsWith(`${LIST}/`) && method === 'DELETE') {
      const id = url.pathname.slice(LIST.length + 1);
      items = items.filter((i) => i.id !== id);
      return json(200, { ok: true });
    }
    return undefined;
  });
}

const type = (label: string, value: string) => fireEvent.change(screen.getByLabelText(label), { target: { value } });

beforeEach(() => session.setLogin('tok', operator));
afterEach(() => vi.unstubAllGlobals());

describe('the operator 镜像登记 tab', () => {
  it('says what to register when there is nothing yet', async () => {
    imageServer();
    renderApp('/operator?tab=images');
    expect(await screen.findByText('镜像仓库：https://registry.example.com', undefined, { timeout: 10_000 })).toBeTruthy();
    expect(screen.getByText(/尚未登记镜像/)).toBeTruthy();
  });

  it('says the list failed to load, with a retry', async () => {
    imageServer([], { fail: true });
    renderApp('/operator?tab=images');
    expect(await screen.findByText('加载失败', undefined, { timeout: 10_000 })).toBeTruthy();
  });

  it('registers an application by reference with its port and command; a missing image is refused with the server’s words', async () => {
    const server = imageServer([pytorch]);
    renderApp('/operator?tab=images');
    await screen.findByText('PyTorch 2.3 · CUDA 12.1', undefined, { timeout: 10_000 });
    fireEvent.click(screen.getByRole('button', { name: /登记镜像/ }));
    const form = screen.getByLabelText('镜像地址').closest('form')!;
    type('镜像地址', 'ai/absent:1');
    type('显示名称', 'SD WebUI 1.9');
    fireEvent.click(within(form).getByText('镜像应用'));
    await waitFor(() => expect(screen.getByLabelText('服务端口')).toBeTruthy());
    fireEvent.change(screen.getByLabelText('服务端口'), { target: { value: '7860' } });
    type('启动命令', 'python3 launch.py --listen');
    fireEvent.change(screen.getByLabelText('显存要求（GB）'), { target: { value: '8' } });
    fireEvent.click(screen.getByRole('button', { name: '检查并登记' }));
    expect(await screen.findByText(/找不到该镜像/, undefined, { timeout: 10_000 })).toBeTruthy();

    type('镜像地址', 'ai/sd-webui:1.9');
    fireEvent.click(screen.getByRole('button', { name: '检查并登记' }));
    const row = (await screen.findByText('SD WebUI 1.9', undefined, { timeout: 10_000 })).closest('tr')!;
    expect(within(row).getByText('拉取中')).toBeTruthy();
    expect(within(row).getByText('端口 7860 · 显存 ≥ 8 GB')).toBeTruthy();
    const posted = callsTo(server, LIST, 'POST').map((c) => c.body);
    expect(posted.at(-1)).toMatchObject({
      reference: 'ai/sd-webui:1.9',
      name: 'SD WebUI 1.9',
      kind: 'application',
      port: 7860,
      minGpuMemoryGb: 8,
      command: 'python3 launch.py --listen',
    });
  }, 40_000);

  it('asks before removing, and says when instances still use an image', async () => {
    const server = imageServer([
      pytorch,
      { ...pytorch, id: 'reg-unused', name: '没人用的镜像', inUse: 0, ready: false, problem: '镜像仓库中没有 ai/unused:1' },
    ]);
    renderApp('/operator?tab=images');
    const used = (await screen.findByText('PyTorch 2.3 · CUDA 12.1', undefined, { timeout: 10_000 })).closest('tr')!;
    expect(within(used).getByText('本机可用')).toBeTruthy();
    expect(within(screen.getByText('没人用的镜像').closest('tr')!).getByText('拉取失败')).toBeTruthy();
    fireEvent.click(within(used).getByRole('button', { name: '移除' }));
    expect(await screen.findByText('有 2 台实例在用，需待其释放后才能移除')).toBeTruthy();
    fireEvent.click(screen.getByRole('button', { name: '取消' }));

    const unused = screen.getByText('没人用的镜像').closest('tr')!;
    fireEvent.click(within(unused).getByRole('button', { name: '移除' }));
    expect(callsTo(server, `${LIST}/reg-unused`, 'DELETE')).toHaveLength(0);
    const confirm = await screen.findByText('移除后市场中不再提供该镜像，已有实例不受影响');
    fireEvent.click(within(confirm.closest('.ant-popover')!).getByRole('button', { name: '移除' }));
    await waitFor(() => expect(screen.queryByText('没人用的镜像')).toBeNull());
    expect(callsTo(server, `${LIST}/reg-unused`, 'DELETE')).toHaveLength(1);
  }, 40_000);
});
