/**
 * The my-data journey of the instances issue, in Chromium against the built console: a new account
 * recharges, buys a post-paid RTX 4090, stops it and saves it as an image (the instance is 操作中
 * meanwhile), finds the image 可用 on /console/gpudata/mirror and turns its share link on;
 * a second account opens the link, sees the image with the owner masked and opens the purchase page
 * with it preselected; the owner then expands the instance's data disk on /console/gpudata/disk.
 */
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeConsole, openConsole } from './suite.js';
import { animationsDone, buttonLabel as label, rechargeInBrowser, registerInBrowser } from './console.js';
import type { RunningServer } from './server.js';

const shots = process.env.E2E_SCREENSHOTS ?? path.join(tmpdir(), 'console-e2e-screenshots', 'images');
const NAME = 'e2e-image-src';
const IMAGE = 'e2e 训练环境';

/** Short operations; saving an image outlasts one 2 s refresh of the lists so 制作中 can be seen. */
const SERVER_ENV = { COMPUTE_SIM_DELAYS: 'create=1500,boot=1500,start=1500,stop=1000,restart=1500,destroy=1000,saveImage=4000,resizeDisk=2500' };

describe('my images and data disks journey', () => {
  let server: RunningServer;
  let browser: Browser;
  let page: Page;
  let imageId = '';

  beforeAll(async () => {
    ({ server, browser, page } = await openConsole({ shots, env: SERVER_ENV, context: true }));
  });
  afterAll(() => closeConsole({ browser, server }));

  const shot = (name: string, on: Page = page) => animationsDone(on).then(() => on.screenshot({ path: path.join(shots, `${name}.png`) }));
  const row = (text: string, on: Page = page) => on.locator('tr[data-row-key]').filter({ hasText: text });
  const tagIn = (scope: ReturnType<typeof row>, text: string) => scope.locator('.ant-tag', { hasText: new RegExp(`^${text}$`) });

  async function confirmDialog(title: string | RegExp, ok: RegExp) {
    const dialog = page.locator('.ant-modal-confirm').filter({ hasText: title });
    await dialog.waitFor();
    await dialog.getByRole('button', { name: ok }).click();
    await dialog.waitFor({ state: 'hidden' });
  }

  it('registers, recharges and buys a post-paid RTX 4090 that comes up running', async () => {
    await registerInBrowser(page, server.url, '136', 'Gpu12345');
    await rechargeInBrowser(browser, page, server.url, 100);

    await page.goto(`${server.url}/stats/purchase?gpuTypeId=rtx4090&cycle=Hour`);
    await page.getByTestId('quote-total').getByText('¥1.98').waitFor();
    await page.getByLabel('实例名称').fill(NAME);
    await page.waitForURL((u) => u.searchParams.get('name') === NAME);
    const buy = page.getByRole('button', { name: '立即购买' });
    await expect.poll(() => buy.isEnabled(), { timeout: 10_000 }).toBe(true);
    await buy.click();
    const confirm = page.locator('.ant-modal-confirm').filter({ hasText: '确认订单' });
    await confirm.getByText(NAME).waitFor();
    // Click once the dialog has finished opening: a click during its animation may land nowhere.
    await animationsDone(page);
    await confirm.getByRole('button', { name: '提交订单' }).click();
    await page.waitForURL('**/console/gpu-generic', { timeout: 60_000 });
    await tagIn(row(NAME), '运行中').waitFor({ timeout: 30_000 });
  });

  it('stops it and saves it as an image: the instance is 操作中, then 已关机 again', async () => {
    await row(NAME)
      .getByRole('button', { name: label('关机') })
      .click();
    await confirmDialog('确认关机？', label('关机'));
    await tagIn(row(NAME), '已关机').waitFor({ timeout: 20_000 });

    await row(NAME)
      .getByRole('button', { name: `更多操作 ${NAME}` })
      .click();
    await page.getByRole('menuitem', { name: '保存镜像' }).click();
    const dialog = page.locator('.ant-modal').filter({ hasText: `保存镜像「${NAME}」` });
    await dialog.getByText('镜像免费保存，每个账号最多 10 个（已有 0 个）').waitFor();
    await dialog.getByLabel('镜像名称').fill(IMAGE);
    await shot('60-save-image-dialog');
    await dialog.getByRole('button', { name: '保存镜像' }).click();
    await dialog.waitFor({ state: 'hidden' });
    await tagIn(row(NAME), '操作中').waitFor({ timeout: 10_000 });
    await shot('61-instance-operating');
    await tagIn(row(NAME), '已关机').waitFor({ timeout: 20_000 });
  });

  it('finds the image 可用, with its size, on my images and turns its share link on', async () => {
    await page.goto(`${server.url}/console/gpudata/mirror`);
    const image = row(IMAGE);
    await image.waitFor();
    imageId = (await image.getAttribute('data-row-key'))!;
    await tagIn(image, '可用').waitFor({ timeout: 20_000 });
    expect(await image.textContent()).toMatch(/\d+ GB/);
    await image.getByRole('switch').click();
    await image.getByRole('button', { name: /复制链接/ }).waitFor();
    await shot('62-mirror-shared');
  });

  it('shows the shared image to another logged-in user, owner masked, and preselects it on the purchase page', async () => {
    const other = await (await browser.newContext({ viewport: { width: 1440, height: 900 }, locale: 'zh-CN' })).newPage();
    await registerInBrowser(other, server.url, '135', 'Gpu12345');
    await other.goto(`${server.url}/image/share?id=${imageId}`);
    await other.getByRole('heading', { name: IMAGE }).waitFor();
    await other.getByText(/^136\*{4}\d{4}$/).waitFor();
    await shot('63-share-page', other);
    await other.getByRole('button', { name: '使用该镜像创建实例' }).click();
    await other.waitForURL((u) => u.pathname === '/stats/purchase' && u.searchParams.get('userImageId') === imageId);
    await other.getByTestId('user-image-choice').getByText(IMAGE).waitFor();
    await other.getByTestId('quote-total').getByText('¥1.98').waitFor();
    await shot('64-purchase-with-shared-image', other);

    // A link that is no longer shared says so.
    await page.bringToFront();
    await row(IMAGE).getByRole('switch').click();
    await row(IMAGE).getByText('未分享').waitFor();
    await other.goto(`${server.url}/image/share?id=${imageId}`);
    await other.getByText('镜像不存在或已取消分享').waitFor();
    await other.close();
  });

  it('expands the stopped instance’s data disk from the data-disk page', async () => {
    await page.goto(`${server.url}/console/gpudata/disk`);
    const disk = row(NAME);
    await disk.getByText('免费').waitFor();
    await disk.getByRole('button', { name: `扩容 ${NAME}` }).click();
    const dialog = page.locator('.ant-modal').filter({ hasText: `数据盘扩容「${NAME}」` });
    await dialog.getByLabel('扩容后容量').fill('150');
    await dialog
      .getByTestId('expand-note')
      .getByText(/无需预付.*每天 ¥0\.70/)
      .waitFor();
    await shot('65-expand-dialog');
    await dialog.getByRole('button', { name: '确认扩容' }).click();
    await page.getByText('扩容已开始，完成后数据盘为 150 GB').waitFor();
    await disk.getByText('150 GB').first().waitFor({ timeout: 20_000 });
    await tagIn(disk, '已关机').waitFor({ timeout: 20_000 });
    expect(await disk.locator('.price').textContent()).toBe('¥0.70/天');
    await shot('66-disk-expanded');
  });
});
