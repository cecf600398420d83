/**
 * Bandwidth of an e-commerce machine, in Chromium against the built console: a new account
 * recharges, buys a post-paid 跨境电商 独立 IP 型 (5 Mbps included), raises it to 20 Mbps from the
 * row menu while it runs (操作中 for the seconds the driver takes, then 运行中 again), and the
 * detail page shows the new bandwidth and the hourly price with it.
 */
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { closeConsole, openConsole } from './suite.js';
import { animationsDone, buttonLabel, rechargeInBrowser, registerInBrowser } from './console.js';
import type { RunningServer } from './server.js';

const shots = process.env.E2E_SCREENSHOTS ?? path.join(tmpdir(), 'console-e2e-screenshots', 'bandwidth');
const NAME = 'e2e-shop';
const SERVER_ENV = { COMPUTE_SIM_DELAYS: 'create=1500,boot=1500,start=1500,stop=1000,destroy=1000,changeBandwidth=3000' };

describe('e-commerce bandwidth journey', () => {
  let server: RunningServer;
  let browser: Browser;
  let page: Page;

  beforeAll(async () => {
    ({ server, browser, page } = await openConsole({ shots, env: SERVER_ENV, context: true }));
  });
  afterAll(() => closeConsole({ browser, server }));

  const shot = (name: string) => page.screenshot({ path: path.join(shots, `${name}.png`) });
  const row = () => page.locator('tr[data-row-key]').filter({ hasText: NAME });
  const tag = (text: string) => row().locator('.ant-tag', { hasText: new RegExp(`^${text}$`) });

  it('buys a post-paid e-commerce machine that comes up running with the bandwidth its size includes', async () => {
    await registerInBrowser(page, server.url, '137', 'Shop12345');
    await rechargeInBrowser(browser, page, server.url, 100);
    await page.goto(`${server.url}/stats/purchase?category=Ebusiness&regionId=sh-a&sizeId=ebz-c2m4&imageId=win-server-2022&cycle=Hour&name=${NAME}`);
    await page.getByTestId('quote-total').getByText('¥0.30').waitFor();
    await page.getByRole('button', { name: '立即购买' }).click();
    const confirm = page.locator('.ant-modal-confirm').filter({ hasText: '确认订单' });
    await confirm.getByText(NAME).waitFor();
    await animationsDone(page);
    await confirm.getByRole('button', { name: '提交订单' }).click();
    await page.waitForURL('**/console/e-business', { timeout: 60_000 });
    await tag('运行中').waitFor({ timeout: 30_000 });
  });

  it('raises the bandwidth to 20 Mbps while it runs: the new hourly price is stated, nothing is paid up front', async () => {
    await row()
      .getByRole('button', { name: `更多操作 ${NAME}` })
      .click();
    await page.getByRole('menuitem', { name: '调整带宽' }).click();
    const dialog = page.locator('.ant-modal').filter({ hasText: `调整带宽「${NAME}」` });
    await dialog.getByText('5 Mbps（规格自带 5 Mbps）').waitFor();
    await dialog.getByText('20 Mbps', { exact: true }).click();
    await dialog
      .getByTestId('bandwidth-hourly')
      .getByText(/调整后每小时 ¥0\.75/)
      .waitFor();
    await dialog.getByTestId('bandwidth-total').getByText('¥0.00').waitFor();
    await shot('70-bandwidth-dialog');
    await animationsDone(page);
    await dialog.getByRole('button', { name: '确认调整' }).click();
    await dialog.waitFor({ state: 'hidden' });
    await page.getByText('正在调整带宽为 20 Mbps，几秒后生效').waitFor();
    await tag('操作中').waitFor({ timeout: 10_000 });
    await tag('运行中').waitFor({ timeout: 20_000 });
  });

  it('shows 20 Mbps and the hourly price with it on the detail page', async () => {
    await row().getByRole('link', { name: '详情' }).click();
    await page.getByTestId('bandwidth').getByText('20 Mbps（含升级 15 Mbps）').waitFor();
    await page.getByRole('button', { name: '调整带宽' }).waitFor();
    await page.getByRole('tab', { name: buttonLabel('计费') }).click();
    await page
      .getByText(/¥0\.75/)
      .first()
      .waitFor();
    await shot('71-detail-bandwidth');
  });
});
