import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { fireEvent, screen, waitFor, within } from '@testing-library/react';
import { session } from '../../../session/store';
import { callsTo, json, page } from '../../../test/http';
import { renderApp } from '../../../test/render';
import { user } from '../../../test/fixtures/user';
import { instanceServer } from '../../../test/fixtures/instances';
import type { ImageStorage, ReceivedImage, UserImage } from '@console/contract';
import { IMAGES, IMG, IMG2, userImage } from '../../../test/fixtures/storage';

const MIRROR = '/console/gpudata/mirror';
const GB = 1024 ** 3;
const RECEIVED = `${IMAGES}/received`;
const D = (c: string) => `sha256:${c.repeat(64)}`;
const STORAGE: ImageStorage = {
  simulated: true,
  sizeBytes: 18 * GB,
  unpackedBytes: 43 * GB,
  base: { ref: 'console/pytorch:1.13.1-cpu', digest: D('b'), name: 'PyTorch 1.13.1 · CPU' },
  layers: [
    { digest: D('1'), sizeBytes: 12 * GB },
    { digest: D('2'), sizeBytes: 6 * GB },
  ],
  createdAt: '2026-11-23T09:00:06.000Z',
};
const received = (over: Partial<ReceivedImage> = {}): ReceivedImage => ({
  id: IMG2,
  name: '朋友的环境',
  status: 'Active',
  category: 'Gpu',
  baseImageId: 'pytorch-2.3-cu121',
  baseImageName: 'PyTorch 2.3.0',
  gpuName: 'RTX 4090',
  sizeGb: 18,
  owner: '139****0001',
  storage: null,
  receivedAt: '2026-11-24T09:00:00.000Z',
  createdAt: '2026-11-23T09:00:00.000Z',
  ...over,
});
const rowOf = async (text: string) => (await screen.findByText(text)).closest<HTMLElement>('tr')!;
const button = (scope: HTMLElement, text: string | RegExp) => within(scope).getByText(text).closest('button')!;

beforeEach(() => session.setLogin('tok', user));
afterEach(() => vi.unstubAllGlobals());

describe('my images page', () => {
  it('lists images with their status labels and colours, the limit, and pages on the server', async () => {
    const images = [
      userImage({ id: IMG, name: '制作中的镜像', status: 'Build', sizeGb: null }),
      userImage({ id: IMG2, name: '可用的镜像', status: 'Active', sizeGb: 18 }),
      userImage({ id: '3c4d5e6f-7a8b-4c9d-8e0f-1a2b3c4d5e6f', name: '失败的镜像', status: 'BuildFail', failReason: '快照存储空间不足', sizeGb: null }),
    ];
    const fetch = instanceServer((url) => (url.pathname === IMAGES ? json(200, { ...page(images, url, 23), limit: 30, used: 23 }) : undefined));
    const router = renderApp(MIRROR);

    expect(await screen.findByText('镜像免费保存，每个账号最多 30 个，已用 23 个')).toBeTruthy();
    const building = await rowOf('制作中的镜像');
    expect(within(building).getByText('制作中').closest('.ant-tag')!.className).toMatch(/processing/);
    expect(button(building, '删除').hasAttribute('disabled')).toBe(true);
    expect(button(building, '创建实例').hasAttribute('disabled')).toBe(true);
    expect(within(building).getByText('制作完成后可分享')).toBeTruthy();
    const active = await rowOf('可用的镜像');
    expect(within(active).getByText('可用').closest('.ant-tag')!.className).toMatch(/success/);
    expect(within(active).getByText('18 GB')).toBeTruthy();
    expect(within(active).getByText('PyTorch 2.3.0')).toBeTruthy();
    expect(within(active).getByText(/RTX 4090 · 实例 训练机-1/)).toBeTruthy();
    const failed = await rowOf('失败的镜像');
    expect(within(failed).getByText('制作失败').closest('.ant-tag')!.className).toMatch(/error/);
    expect(screen.getByText('共 23 个镜像')).toBeTruthy();
    expect(callsTo(fetch, IMAGES).map((c) => c.url.search)).toContain('?page=1&pageSize=10');
    fireEvent.click(document.querySelector('.ant-pagination-item-3')!);
    await waitFor(() => expect(callsTo(fetch, IMAGES).at(-1)!.url.search).toBe('?page=3&pageSize=10'));
    expect(router.state.location.search).toBe('?page=3'); // the page is in the URL: back and reload keep it
  });

  it('opens on the page and page size the URL asks for', async () => {
    const fetch = instanceServer((url) => (url.pathname === IMAGES ? json(200, { ...page([userImage()], url, 45), limit: 50, used: 45 }) : undefined));
    renderApp(`${MIRROR}?page=2&pageSize=20`);
    await rowOf('SD 训练环境');
    expect(callsTo(fetch, IMAGES)[0]!.url.search).toBe('?page=2&pageSize=20');
  });

  it('refreshes itself while an image is being made, until it is usable', async () => {
    let calls = 0;
    instanceServer((url) => {
      if (url.pathname !== IMAGES) return undefined;
      calls += 1;
      return json(200, { ...page([userImage({ status: calls < 2 ? 'Build' : 'Active', sizeGb: calls < 2 ? null : 18 })], url), limit: 10, used: 1 });
    });
    renderApp(MIRROR);
    const row = await rowOf('SD 训练环境');
    expect(within(row).getByText('制作中')).toBeTruthy();
    await waitFor(() => expect(within(row).getByText('可用')).toBeTruthy(), { timeout: 5000 });
    expect(within(row).getByText('18 GB')).toBeTruthy();
  });

  it('turns the share link on and copies it; deletes after a confirmation; creates an instance from an image', async () => {
    let image = userImage();
    const writeText = vi.fn(async () => undefined);
    Object.defineProperty(navigator, 'clipboard', { value: { writeText }, configurable: true });
    const fetch = instanceServer((url, init) => {
      if (url.pathname === `${IMAGES}/${IMG}/share` && init?.method === 'PUT') {
        const { shared } = JSON.parse(String(init.body)) as { shared: boolean };
        image = { ...image, shared, sharePath: shared ? `/image/share?id=${IMG}` : null };
        return json(200, image);
      }
      if (url.pathname === `${IMAGES}/${IMG}` && init?.method === 'DELETE')
        return json(200, {
          ok: true,
          message: '镜像已删除；它在主机上的镜像层（5.0 GB）已不再被引用，将在镜像清理时释放（模拟）',
          freedBytes: 5 * GB,
          simulated: true,
        });
      if (url.pathname === IMAGES) return json(200, { ...page([image], url), limit: 10, used: 1 });
      return undefined;
    });
    const router = renderApp(MIRROR);
    let row = await rowOf('SD 训练环境');
    expect(within(row).getByText('未分享')).toBeTruthy();
    fireEvent.click(within(row).getByLabelText('分享 SD 训练环境'));
    await waitFor(() => expect(callsTo(fetch, `${IMAGES}/${IMG}/share`, 'PUT').map((c) => c.body)).toEqual([{ shared: true }]));
    row = await rowOf('SD 训练环境');
    fireEvent.click((await within(row).findByText('复制链接')).closest('button')!);
    await waitFor(() => expect(writeText).toHaveBeenCalledWith(`${window.location.origin}/image/share?id=${IMG}`));

    fireEvent.click(button(row, /删\s*除/));
    const dialog = (await screen.findAllByText('确认删除镜像「SD 训练环境」？')).at(-1)!.closest<HTMLElement>('.ant-modal')!;
    expect(within(dialog).getByText(/分享链接随即失效/)).toBeTruthy();
    fireEvent.click(button(dialog, '确认删除'));
    await waitFor(() => expect(callsTo(fetch, `${IMAGES}/${IMG}`, 'DELETE')).toHaveLength(1));
    // What the host did with it is said.
    expect(await screen.findByText(/已不再被引用，将在镜像清理时释放（模拟）/)).toBeTruthy();

    fireEvent.click(button(await rowOf('SD 训练环境'), '创建实例'));
    await waitFor(() => expect(router.state.location.pathname).toBe('/stats/purchase'));
    expect(router.state.location.search).toBe(`?userImageId=${IMG}`);
  });

  it('shows each image’s size as the host keeps it, and its base and layers in the detail drawer (simulated figures labelled)', async () => {
    const image = userImage({ storage: STORAGE });
    instanceServer((url) => {
      if (url.pathname === `${IMAGES}/${IMG}`) return json(200, image);
      if (url.pathname === RECEIVED) return json(200, { items: [] });
      if (url.pathname === IMAGES) return json(200, { ...page([image], url), limit: 10, used: 1 });
      return undefined;
    });
    renderApp(MIRROR);
    const row = await rowOf('SD 训练环境');
    expect(within(row).getByText('18.0 GB')).toBeTruthy();
    expect(within(row).getByText('模拟')).toBeTruthy();
    expect(within(row).getByText('压缩后 · 解压后 43.0 GB')).toBeTruthy();

    fireEvent.click(button(row, '详情'));
    const drawer = (await screen.findByText('镜像详情：SD 训练环境')).closest<HTMLElement>('.ant-drawer')!;
    await within(drawer).findByText('PyTorch 1.13.1 · CPU');
    expect(within(drawer).getByText(`console/pytorch:1.13.1-cpu · ${'b'.repeat(12)}`)).toBeTruthy();
    expect(within(drawer).getByText('镜像层（2）')).toBeTruthy();
    expect(within(drawer).getByText('模拟数据')).toBeTruthy();
    const layerTable = within(drawer).getByText('大小（压缩后）').closest<HTMLElement>('table')!;
    const layers = within(layerTable).getAllByRole('row').slice(1);
    expect(
      layers.map((r) =>
        within(r)
          .getAllByRole('cell')
          .map((c) => c.textContent),
      ),
    ).toEqual([
      ['1', '1'.repeat(12), '12.0 GB'],
      ['2', `${'2'.repeat(12)}实例的改动`, '6.0 GB'],
    ]);
  });

  it('makes a share code in the drawer, shows and revokes it', async () => {
    let image: UserImage = userImage();
    const fetch = instanceServer((url, init) => {
      if (url.pathname === `${IMAGES}/${IMG}/share-code` && init?.method === 'POST') {
        image = { ...image, shareCode: 'K7M2QXD9PA' };
        return json(200, image);
      }
      if (url.pathname === `${IMAGES}/${IMG}/share-code` && init?.method === 'DELETE') {
        image = { ...image, shareCode: null };
        return json(200, image);
      }
      if (url.pathname === `${IMAGES}/${IMG}`) return json(200, image);
      if (url.pathname === RECEIVED) return json(200, { items: [] });
      if (url.pathname === IMAGES) return json(200, { ...page([image], url), limit: 10, used: 1 });
      return undefined;
    });
    renderApp(MIRROR);
    fireEvent.click(button(await rowOf('SD 训练环境'), '详情'));
    const drawer = (await screen.findByText('镜像详情：SD 训练环境')).closest<HTMLElement>('.ant-drawer')!;
    expect(within(drawer).getByText('主机上暂无该镜像的分层信息')).toBeTruthy();
    fireEvent.click(await within(drawer).findByRole('button', { name: '生成共享码' }));
    await waitFor(() => expect(callsTo(fetch, `${IMAGES}/${IMG}/share-code`, 'POST')).toHaveLength(1));
    expect(await within(drawer).findByText('K7M2QXD9PA')).toBeTruthy();
    expect(within(drawer).getByText('已有 0 个账号在使用')).toBeTruthy();

    fireEvent.click(within(drawer).getByRole('button', { name: /撤\s*销/ }));
    fireEvent.click((await screen.findAllByRole('button', { name: /撤\s*销/ })).at(-1)!);
    await waitFor(() => expect(callsTo(fetch, `${IMAGES}/${IMG}/share-code`, 'DELETE')).toHaveLength(1));
    expect(await within(drawer).findByRole('button', { name: '生成共享码' })).toBeTruthy();
  });

  it('adds an image by another account’s share code, says why a code is refused, and creates an instance from it', async () => {
    let items: ReceivedImage[] = [];
    const fetch = instanceServer((url, init) => {
      if (url.pathname === RECEIVED && init?.method === 'POST') {
        const { code } = JSON.parse(String(init.body)) as { code: string };
        if (code !== 'k7m2q-xd9pa') return json(404, { code: 40421003, message: '共享码不存在或已被分享者撤销，请核对后重新输入，或向分享者索取新的共享码' });
        items = [received()];
        return json(200, items[0]);
      }
      if (url.pathname === RECEIVED) return json(200, { items });
      if (url.pathname === IMAGES) return json(200, { ...page([], url), limit: 10, used: 0 });
      return undefined;
    });
    const router = renderApp(MIRROR);
    expect(await screen.findByText('还没有他人共享给你的镜像：输入共享码即可添加')).toBeTruthy();
    const input = screen.getByLabelText('共享码');

    fireEvent.change(input, { target: { value: 'ABCDEFGHJK' } });
    fireEvent.click(screen.getByRole('button', { name: '使用共享镜像' }));
    expect(await screen.findByText('共享码不存在或已被分享者撤销，请核对后重新输入，或向分享者索取新的共享码')).toBeTruthy();

    fireEvent.change(input, { target: { value: ' k7m2q-xd9pa ' } });
    fireEvent.click(screen.getByRole('button', { name: '使用共享镜像' }));
    expect(await screen.findByText('已添加「朋友的环境」，可用它创建实例')).toBeTruthy();
    expect(callsTo(fetch, RECEIVED, 'POST').map((c) => c.body)).toEqual([{ code: 'ABCDEFGHJK' }, { code: 'k7m2q-xd9pa' }]);
    const row = await rowOf('朋友的环境');
    expect(within(row).getByText('139****0001')).toBeTruthy();
    // Read only: no rename, share or delete for it.
    expect(within(row).queryByText('删除')).toBeNull();
    fireEvent.click(button(row, '创建实例'));
    await waitFor(() => expect(router.state.location.pathname).toBe('/stats/purchase'));
    expect(router.state.location.search).toBe(`?userImageId=${IMG2}`);
  });

  it('says how to make the first image when there is none', async () => {
    instanceServer((url) => (url.pathname === IMAGES ? json(200, { ...page([], url), limit: 10, used: 0 }) : undefined));
    renderApp(MIRROR);
    expect(await screen.findByText('还没有镜像：实例关机后可保存为镜像')).toBeTruthy();
    expect(screen.getByText('查看 GPU 实例').closest('a')!.getAttribute('href')).toBe('/console/gpu-generic');
  });
});
