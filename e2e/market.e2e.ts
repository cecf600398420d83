/**
 * The buyer's way through the catalogue, in Debian's Chromium against the built console and a real
 * server with the seeded catalogue: filter the GPU market, open the configurator from a card, watch
 * the server's price follow the billing cycle, and — as a visitor — log in from 立即购买 and come
 * back to the very same configuration.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeConsole, openConsole } from './suite.js';
import type { RunningServer } from './server.js';

const shots = path.join(path.dirname(fileURLToPath(import.meta.url)), 'screenshots');
const DEMO = { mobile: '13800000000', password: 'Demo1234' };

describe('GPU market to purchase', () => {
  let server: RunningServer;
  let browser: Browser;
  let page: Page;
  /** The configurator URL the visitor left for the login page. */
  let configured: URL;

  beforeAll(async () => {
    ({ server, browser, page } = await openConsole({ shots }));
  });
  afterAll(() => closeConsole({ browser, server }));

  const total = () => page.getByTestId('quote-total');
  const cycleOption = (label: string) => page.getByRole('radiogroup', { name: '计费方式' }).getByText(label, { exact: true });

  it('filters the market by GPU model', async () => {
    await page.goto(server.url + '/stats/cloud/gpu');
    await page.getByRole('article').first().waitFor();
    await page.getByRole('radiogroup', { name: 'GPU 型号' }).getByText('RTX 4090', { exact: true }).click();
    await page.waitForURL(/gpuTypeId=rtx4090/);
    // The list settles on the filtered answer: every card is an RTX 4090.
    await expect.poll(async () => (await page.locator('.gpu-card-model').allTextContents()).every((t) => t.startsWith('RTX 4090'))).toBe(true);
    expect(await page.locator('.gpu-card-model').count()).toBeGreaterThan(0);
    await page.screenshot({ path: path.join(shots, '10-market-filtered.png'), fullPage: true });
  });

  it('opens the configurator from a card and the total follows the cycle', async () => {
    await page.getByRole('button', { name: '立即租用' }).first().click();
    await page.waitForURL(/\/stats\/purchase\?.*hostId=/);
    const url = new URL(page.url());
    expect(url.searchParams.get('gpuTypeId')).toBe('rtx4090');
    expect(url.searchParams.get('cycle')).toBe('Hour');

    await total().waitFor();
    const hourly = await total().textContent();
    expect(hourly).toMatch(/^¥\d+\.\d{2}$/);
    await page.screenshot({ path: path.join(shots, '11-purchase-hour.png'), fullPage: true });

    await cycleOption('按日').click();
    await page.waitForURL(/cycle=Day/);
    await expect.poll(() => total().textContent()).not.toBe(hourly);
    expect(await total().textContent()).toMatch(/^¥\d+\.\d{2}$/);
    await page.screenshot({ path: path.join(shots, '12-purchase-day.png'), fullPage: true });
  });

  it('sends the visitor to log in with the configuration and brings them back to it', async () => {
    configured = new URL(page.url());
    const buy = page.getByRole('button', { name: '立即购买' });
    await expect.poll(() => buy.isEnabled()).toBe(true);
    await buy.click();
    await page.waitForURL(/\/login\?redirect=/);
    const redirect = new URL(new URL(page.url()).searchParams.get('redirect')!, server.url);
    expect(redirect.pathname).toBe('/stats/purchase');
    expect(redirect.searchParams.get('gpuTypeId')).toBe('rtx4090');
    expect(redirect.searchParams.get('cycle')).toBe('Day');

    await page.getByPlaceholder('手机号或邮箱').fill(DEMO.mobile);
    await page.getByPlaceholder('请输入密码').fill(DEMO.password);
    await page.getByRole('button', { name: /登\s*录/ }).click();

    await page.waitForURL(/\/stats\/purchase\?/);
    const back = new URL(page.url());
    for (const key of ['hostId', 'gpuTypeId', 'regionId', 'roomId', 'gpuCount', 'cycle', 'duration']) {
      expect(back.searchParams.get(key), key).toBe(configured.searchParams.get(key));
    }
    // What the page shows, not only its URL: the same model, 按日 selected, a price for it.
    await expect.poll(() => page.getByRole('radio', { name: 'RTX 4090', exact: true }).getAttribute('aria-checked')).toBe('true');
    await expect.poll(() => cycleOption('按日').locator('xpath=ancestor::label[1]').getAttribute('class')).toContain('ant-segmented-item-selected');
    await total().waitFor();
    expect(await total().textContent()).toMatch(/^¥\d+\.\d{2}$/);
    await page.getByLabel('代金券').waitFor(); // only logged-in buyers see the voucher field
    await page.screenshot({ path: path.join(shots, '13-purchase-after-login.png'), fullPage: true });
  });

  it('a logged-in buyer sees the order confirmation with the total', async () => {
    const expected = await total().textContent();
    const buy = page.getByRole('button', { name: '立即购买' });
    await expect.poll(() => buy.isEnabled()).toBe(true);
    await buy.click();
    const dialog = page.getByRole('dialog').filter({ hasText: '确认订单' });
    await dialog.waitFor();
    expect(await dialog.textContent()).toContain(expected!);
    await page.waitForTimeout(400); // let the opening animation finish before the picture
    await page.screenshot({ path: path.join(shots, '14-confirm-order.png') });
  });
});
