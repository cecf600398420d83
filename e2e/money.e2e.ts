/**
 * The money journey of the payment issue, in Chromium against the built console: a new account
 * recharges 100 yuan through the embedded sandbox gateway's scan page, sees 118 available (100 cash
 * + 18 gift credit) and finds its 50-yuan new-user voucher.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeConsole, openConsole } from './suite.js';
import { registerInBrowser, payOnSandboxPage } from './console.js';
import type { RunningServer } from './server.js';

const shots = path.join(path.dirname(fileURLToPath(import.meta.url)), 'screenshots');

describe('recharge journey', () => {
  let server: RunningServer;
  let browser: Browser;
  let page: Page;

  beforeAll(async () => {
    ({ server, browser, page } = await openConsole({ shots }));
  });
  afterAll(() => closeConsole({ browser, server }));

  it('registers a new account', async () => {
    await registerInBrowser(page, server.url, '136', 'Money1234');
  });

  it('recharges 100 yuan on the sandbox scan page and sees 118 available', async () => {
    await page.goto(`${server.url}/console/recharge`);
    await page.getByRole('button', { name: '¥100', exact: true }).click();
    await page.getByText('本次到账后赠送 ¥18.00 赠送金').waitFor();
    await page.getByRole('button', { name: /立即充值 ¥100\.00/ }).click();
    await page.getByText('支付宝扫码支付').waitFor();
    await page.screenshot({ path: path.join(shots, '20-recharge-qr.png') });

    // The QR code encodes the sandbox scan page; a payer's phone would open it, the test does.
    const scanUrl = await page.getByRole('link', { name: '打开沙箱支付页' }).getAttribute('href');
    expect(scanUrl).toMatch(/\/dev\/pay\/sandbox\/R\d{14}/);
    await payOnSandboxPage(browser, scanUrl!);

    await page.getByText('充值成功').waitFor({ timeout: 20_000 });
    await page.getByText('现金 +¥100.00，赠送金 +¥18.00').waitFor();
    await page.screenshot({ path: path.join(shots, '21-recharge-paid.png') });
    await page.getByRole('button', { name: '完成' }).click();
    await page.getByLabel('余额').getByText('¥118.00').waitFor();

    await page.goto(`${server.url}/console/cost/balance`);
    await page.getByText('118.00').first().waitFor();
    await page.getByText('充值到账').waitFor();
    await page.screenshot({ path: path.join(shots, '22-balance.png') });
  });

  it('shows the 50-yuan new-user voucher on the coupon page', async () => {
    await page.goto(`${server.url}/console/cost/coupon`);
    const card = page.getByLabel('代金券 新用户专享代金券');
    await card.waitFor();
    expect(await card.textContent()).toContain('50');
    await page.screenshot({ path: path.join(shots, '23-coupon.png') });
  });
});
