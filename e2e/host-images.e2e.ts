/**
 * The "Done when" journey of issue 30 (a real GPU host), in Chromium against the built console on
 * COMPUTE_DRIVER=local, booting the real stock images that `npm run images` built (server/images/*.json)
 * into the images cache IMAGES_CACHE (.ci/run keeps it on the host; its layout is hard-linked into the
 * server's DATA_DIR, never written): the market shows this host's real cores and memory and sells no GPU;
 * a CPU instance on "PyTorch 1.13.1 · CPU" imports torch in the web terminal; a file written in /root is
 * in the image saved from it and on a second instance made from that image; the Jupyter Notebook
 * 镜像应用, deployed on a CPU size, opens through 打开应用; a 云桌面 on "Debian 12 · Xfce 中文桌面" runs a Chinese Xfce session
 * and Chromium, drawn in the browser. Every instance is released at the end.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os, { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { animationsDone, buttonLabel, canvasColours, rechargeInBrowser, registerInBrowser } from './console.js';
import { freePort, ociLayoutOf, type RunningServer } from './server.js';
import { closeConsole, openConsole } from './suite.js';

const shots = process.env.E2E_SCREENSHOTS ?? path.join(tmpdir(), 'console-e2e-screenshots', 'host-images');
/** Where `npm run images` keeps the stock images (a DATA_DIR-shaped folder; .ci/run sets and fills it). */
const IMAGES_CACHE = process.env.IMAGES_CACHE ?? '/var/cache/console-images';
const API = '/upgpu/api/v2.1/instances';

const TORCH = 'e2e-torch';
const FROM_IMAGE = 'e2e-from-image';
const DESK = 'e2e-xfce';
const NOTEBOOK = 'e2e-notebook';
/** The 镜像应用 of the stock image console/notebook:6.4.12 (server/catalogue/catalogue.json: jupyter-notebook). */
const APP = 'Jupyter Notebook · 数据分析';
const PAGE_APP = '/console/app';
const SAVED = 'e2e 带标记的 PyTorch';
/** What Chromium shows on the 云桌面: a white page in Chinese (Noto CJK), titled in Chinese. */
const BROWSER_PAGE = 'data:text/html;charset=utf-8,<title>云桌面浏览器</title><h1>你好，这是云桌面里的 Chromium</h1>';
/** A step that boots an image: its first boot unpacks it (PyTorch's tree is 1.5 GiB) on a loaded machine. */
const BOOTS = 360_000;

/**
 * The shipped catalogue with the host's cores and memory sold several times over (the operator's
 * overcommit ratios): this journey runs three machines at once, a 4-core desktop among them, on a
 * 2-core CI machine. The market still shows the host's real cores and memory, which is what it checks.
 */
function shippedCatalogueOvercommitted(): string {
  const file = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'server', 'catalogue', 'catalogue.json');
  const catalogue = JSON.parse(readFileSync(file, 'utf8'));
  catalogue.settings = { ...catalogue.settings, hostCpuOvercommit: 8, hostMemoryOvercommit: 4 };
  const copy = path.join(mkdtempSync(path.join(tmpdir(), 'console-e2e-catalogue-')), 'catalogue.json');
  writeFileSync(copy, JSON.stringify(catalogue));
  return copy;
}

/** The stock images the journey boots (server/images/*.json), as `npm run images` names them in the layout. */
const STOCK_IMAGES = ['console/pytorch:1.13.1-cpu', 'console/notebook:6.4.12', 'console/desktop:12'];

/** Fails at once, naming the command, where the cache lacks an image: a purchase would only time out. */
function checkImagesCache(): void {
  const index = path.join(ociLayoutOf(IMAGES_CACHE), 'index.json');
  const refs = existsSync(index)
    ? (JSON.parse(readFileSync(index, 'utf8')) as { manifests: { annotations?: Record<string, string> }[] }).manifests.map(
        (m) => m.annotations?.['org.opencontainers.image.ref.name'],
      )
    : [];
  const missing = STOCK_IMAGES.filter((ref) => !refs.includes(ref));
  if (missing.length) throw new Error(`${IMAGES_CACHE} lacks ${missing.join(', ')}: run \`DATA_DIR=${IMAGES_CACHE} npm run images\` (as root) first`);
}

describe('issue 30: a real host on the stock images', () => {
  let server: RunningServer;
  let browser: Browser;
  let page: Page;

  const catalogue = shippedCatalogueOvercommitted();

  beforeAll(async () => {
    checkImagesCache();
    const machinePort = await freePort();
    ({ server, browser, page } = await openConsole({
      shots,
      context: true,
      imagesFrom: IMAGES_CACHE,
      env: {
        COMPUTE_DRIVER: 'local',
        CATALOGUE_FILE: catalogue,
        SSH_GATEWAY_PORT: '0',
        // Each instance's services and applications on an origin of its own (*.localhost is this machine).
        MACHINE_PORT: String(machinePort),
        MACHINE_BASE_URL: `http://{id}.localhost:${machinePort}`,
      },
    }));
  });
  // The server ends the machines still running as it stops, and its DATA_DIR holds their unpacked images.
  afterAll(async () => {
    await closeConsole({ browser, server });
    rmSync(path.dirname(catalogue), { recursive: true, force: true });
  }, BOOTS);

  const shot = (name: string, on: Page = page) => animationsDone(on).then(() => on.screenshot({ path: path.join(shots, `${name}.png`) }));
  const row = (name: string) => page.locator('tr[data-row-key]').filter({ hasText: name });
  const tagIn = (name: string, text: string) => row(name).locator('.ant-tag', { hasText: new RegExp(`^${text}$`) });
  /** What the web terminal shows, row by row (xterm's DOM renderer). */
  const screen = () => page.locator('[data-testid=web-terminal] .xterm-rows');

  /** Orders what the purchase page shows (post-paid) and waits for the instance's row to read 运行中; its id. */
  async function submitOrder(name: string, listPath: string): Promise<string> {
    await page.getByRole('button', { name: '立即购买' }).click();
    const confirm = page.locator('.ant-modal-confirm').filter({ hasText: '确认订单' });
    await confirm.getByText(name).waitFor();
    await animationsDone(page);
    await confirm.getByRole('button', { name: '提交订单' }).click();
    await page.waitForURL(`**${listPath}`, { timeout: 60_000 });
    // A first boot unpacks the image (the PyTorch tree is 1.5 GiB) on a loaded machine.
    await tagIn(name, '运行中').waitFor({ timeout: 240_000 });
    return (await row(name).getAttribute('data-row-key'))!;
  }

  /** Opens the instance's web terminal on its detail page, once its shell prompt shows. */
  async function openTerminal(category: string, id: string): Promise<void> {
    await page.goto(`${server.url}/console/ipvm/detail/${category}/${id}?tab=terminal`);
    await page.getByTestId('terminal-status').getByText('已连接').waitFor({ timeout: 30_000 });
    await screen()
      .getByText(/root@instance-/)
      .first()
      .waitFor({ timeout: 30_000 });
  }

  async function typeInTerminal(line: string): Promise<void> {
    await page.locator('[data-testid=web-terminal] .xterm-helper-textarea').focus();
    await page.keyboard.type(`${line}\n`);
  }

  it('shows this host’s real cores and memory on the market, and no GPU for sale', async () => {
    await registerInBrowser(page, server.url, '138', 'Host12345');
    await rechargeInBrowser(browser, page, server.url, 100);
    await page.goto(`${server.url}/stats/cloud/gpu`);
    const hardware = `${os.cpus().length} 核 / ${Math.floor(os.totalmem() / 1024 ** 3)} GB 内存 / 无 GPU`;
    await page.locator('.host-note').getByText(`本主机：${hardware}`).waitFor();
    await page.locator('.market-empty').getByText(`本主机没有 GPU（${hardware}），暂无 GPU 主机可租用；可购买 CPU 实例`).waitFor();
    expect(await page.locator('.gpu-card').count()).toBe(0);
    await shot('10-gpu-market');
  });

  it('buys a CPU instance on PyTorch 1.13.1 · CPU and imports torch in its web terminal', { timeout: BOOTS }, async () => {
    await page.goto(`${server.url}/stats/purchase?category=Generic&sizeId=gen-c2m4&imageId=pytorch-1.13-cpu&cycle=Hour&name=${TORCH}`);
    await page.getByTestId('quote-total').getByText('¥0.12').waitFor();
    await page.getByText('PyTorch 1.13.1 · CPU').first().waitFor();
    await shot('20-purchase-pytorch');
    const id = await submitOrder(TORCH, '/console/generic/cpu');

    await openTerminal('Generic', id);
    await typeInTerminal(`python3 -c 'import torch; print(torch.__version__)'`);
    await screen()
      .getByText(/^1\.13/)
      .waitFor({ timeout: 90_000 });
    await shot('21-terminal-torch');
  });

  it('saves the instance with a file in /root as an image; a second instance made from it has the file', { timeout: BOOTS }, async () => {
    await typeInTerminal('echo saved-in-image-$((6*7)) > /root/marker.txt; cat /root/marker.txt');
    await screen().getByText('saved-in-image-42', { exact: true }).waitFor();

    await page.goto(`${server.url}/console/generic/cpu`);
    await row(TORCH)
      .getByRole('button', { name: buttonLabel('关机') })
      .click();
    const stop = page.locator('.ant-modal-confirm').filter({ hasText: '确认关机？' });
    await stop.getByRole('button', { name: buttonLabel('关机') }).click();
    await tagIn(TORCH, '已关机').waitFor({ timeout: 60_000 });

    await row(TORCH)
      .getByRole('button', { name: `更多操作 ${TORCH}` })
      .click();
    await page.getByRole('menuitem', { name: '保存镜像' }).click();
    const dialog = page.locator('.ant-modal').filter({ hasText: `保存镜像「${TORCH}」` });
    await dialog.getByLabel('镜像名称').fill(SAVED);
    await dialog.getByRole('button', { name: '保存镜像' }).click();
    await dialog.waitFor({ state: 'hidden' });

    await page.goto(`${server.url}/console/gpudata/mirror`);
    const image = row(SAVED);
    await image.locator('.ant-tag', { hasText: /^可用$/ }).waitFor({ timeout: 120_000 });
    await shot('30-saved-image');
    await image.getByRole('button', { name: '创建实例' }).click();
    await page.waitForURL((u) => u.pathname === '/stats/purchase' && u.searchParams.get('userImageId') !== null);
    await page.getByTestId('user-image-choice').getByText(SAVED).waitFor();
    await page.getByLabel('实例名称').fill(FROM_IMAGE);
    await page.waitForURL((u) => u.searchParams.get('name') === FROM_IMAGE);
    await page.getByTestId('quote-total').getByText('¥0.12').waitFor();
    const id = await submitOrder(FROM_IMAGE, '/console/generic/cpu');

    await openTerminal('Generic', id);
    await typeInTerminal('cat /root/marker.txt; hostname');
    await screen().getByText('saved-in-image-42', { exact: true }).waitFor();
    await screen()
      .getByText(`instance-${id.slice(0, 8)}`, { exact: true })
      .waitFor();
    await shot('31-terminal-from-image');
  });

  it('deploys the Jupyter Notebook 镜像应用 on a CPU size and opens Jupyter through 打开应用', { timeout: BOOTS }, async () => {
    await page.goto(`${server.url}/stats/cloud/apply`);
    const card = page.getByRole('article', { name: APP });
    await card.locator('.app-card-meta').getByText('无需 GPU').waitFor();
    await card.scrollIntoViewIfNeeded();
    await shot('50-applications');
    await card.getByRole('button', { name: '立即部署' }).click();
    await page.waitForURL((u) => u.pathname === '/stats/purchase' && u.searchParams.get('applicationId') === 'jupyter-notebook');
    await page.getByLabel('实例名称').fill(NOTEBOOK);
    await page.waitForURL((u) => u.searchParams.get('name') === NOTEBOOK);
    await page.getByTestId('quote-total').getByText('¥0.12').waitFor();
    await shot('51-purchase-application');
    await submitOrder(NOTEBOOK, PAGE_APP);

    // The application is served on the instance's own origin; until port 8888 answers, the 启动中 page
    // reloads itself.
    const [app] = await Promise.all([page.context().waitForEvent('page'), row(NOTEBOOK).getByRole('link', { name: '打开应用' }).click()]);
    await app.locator('#notebook_list').waitFor({ timeout: 120_000 });
    expect(await app.title()).toMatch(/Jupyter|Home/);
    await shot('52-jupyter', app);
    await app.close();
  });

  it('runs a Chinese Xfce desktop with Chromium on a 云桌面 of Debian 12 · Xfce 中文桌面, drawn in the browser', { timeout: BOOTS }, async () => {
    await page.goto(`${server.url}/stats/purchase?category=Desktop&regionId=bj-b&sizeId=dsk-c4m8&imageId=debian-12-desktop&cycle=Hour&name=${DESK}`);
    await page.getByTestId('quote-total').getByText('¥0.35').waitFor();
    await page.getByText('Debian 12 · Xfce 中文桌面').first().waitFor();
    const id = await submitOrder(DESK, '/console/desktop');

    // Chromium opened on the desktop's display from the instance's terminal, with a page in Chinese; then
    // what runs inside: the Xfce session in zh_CN.UTF-8 and Chromium.
    await openTerminal('Desktop', id);
    await typeInTerminal(`DISPLAY=:1 LANG=zh_CN.UTF-8 setsid chromium --start-maximized '${BROWSER_PAGE}' >/dev/null 2>&1 &`);
    await typeInTerminal(
      'for i in $(seq 120); do pgrep -x chromium >/dev/null && break; sleep 0.5; done; ' +
        'tr "\\0" "\\n" < /proc/$(pgrep -xo xfce4-session)/environ | grep "^LANG="; pgrep -x chromium >/dev/null && echo chromium-runs-$((6*7))',
    );
    await screen().getByText('LANG=zh_CN.UTF-8', { exact: true }).waitFor({ timeout: 60_000 });
    await screen().getByText('chromium-runs-42', { exact: true }).waitFor({ timeout: 60_000 });
    await shot('40-desktop-terminal');

    await page.goto(`${server.url}/rdp/${id}`);
    await page.getByTestId('desktop-status').getByText('已连接').waitFor({ timeout: 30_000 });
    await expect.poll(() => canvasColours(page), { timeout: 30_000 }).toBeGreaterThan(1);
    // Chromium's maximised window, its page white, covers most of the dark desktop once it is drawn.
    await expect.poll(() => canvasWhiteShare(page), { timeout: 60_000 }).toBeGreaterThan(0.5);
    await shot('41-desktop');
  });

  it('releases every instance', { timeout: BOOTS }, async () => {
    const token = await page.evaluate(() => localStorage.getItem('token'));
    const call = (p: string, method = 'GET') => fetch(`${server.url}${p}`, { method, headers: { authorization: `Bearer ${token}` } });
    const listed = async () => ((await (await call(`${API}?pageSize=100`)).json()) as { items: { id: string; name: string }[] }).items;
    const status = async (id: string) => {
      const res = await call(`${API}/${id}`);
      return res.ok ? ((await res.json()) as { status: string }).status : 'gone';
    };
    const release = async (id: string) => {
      if ((await status(id)) === 'Running') expect((await call(`${API}/${id}/stop`, 'POST')).status).toBe(200);
      await expect.poll(() => status(id), { timeout: 60_000 }).toMatch(/^(Stopped|Shutdown)$/);
      expect((await call(`${API}/${id}/release`, 'POST')).status).toBe(200);
      // A release ends once the machine's disks are gone (its unpacked image stays for the image gc):
      // long on a loaded machine when all four go at once.
      await expect.poll(() => status(id), { timeout: 240_000 }).toBe('gone');
    };

    const instances = await listed();
    expect(instances.map((i) => i.name).sort()).toEqual([TORCH, FROM_IMAGE, NOTEBOOK, DESK].sort());
    await Promise.all(instances.map((i) => release(i.id)));
    expect(await listed()).toEqual([]);
  });
});

/** The share of the remote desktop's canvas that is white (sampled). */
function canvasWhiteShare(page: Page): Promise<number> {
  return page.evaluate(() => {
    const canvas = document.querySelector<HTMLCanvasElement>('[data-testid=remote-desktop] canvas');
    if (!canvas || !canvas.width) return 0;
    const data = canvas.getContext('2d')!.getImageData(0, 0, canvas.width, canvas.height).data;
    let white = 0;
    let seen = 0;
    for (let i = 0; i < data.length; i += 4 * 97, seen++) if (data[i]! > 240 && data[i + 1]! > 240 && data[i + 2]! > 240) white++;
    return white / seen;
  });
}
