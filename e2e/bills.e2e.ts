/**
 * The bills journey of the money issue, in Chromium against the built console: a new account
 * recharges 500 yuan through the sandbox scan page (590 available: 500 cash + 90 gift credit), buys
 * two 1000 万 Token packages (100 yuan) paying with the 50-yuan new-user voucher and the balance,
 * sees the package with its remain, finds the order 已完成 on the bill page's 模型账单 tab, and the
 * header balance 50 yuan lower.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeConsole, openConsole } from './suite.js';
import { animationsDone, registerInBrowser, payOnSandboxPage } from './console.js';
import type { RunningServer } from './server.js';

const shots = path.join(path.dirname(fileURLToPath(import.meta.url)), 'screenshots');
const PACKAGE = '大模型 Token 包 1000 万';

describe('bills journey', () => {
  let server: RunningServer;
  let browser: Browser;
  let page: Page;

  beforeAll(async () => {
    ({ server, browser, page } = await openConsole({ shots }));
  });
  afterAll(() => closeConsole({ browser, server }));

  it('registers a new account', async () => {
    await registerInBrowser(page, server.url, '135', 'Bills1234');
  });

  it('recharges 500 yuan on the sandbox scan page: 590 available', async () => {
    await page.goto(`${server.url}/console/recharge`);
    await page.getByRole('button', { name: '¥500', exact: true }).click();
    await page.getByRole('button', { name: /立即充值 ¥500\.00/ }).click();
    const scanUrl = await page.getByRole('link', { name: '打开沙箱支付页' }).getAttribute('href');
    await payOnSandboxPage(browser, scanUrl!);
    await page.getByText('充值成功').waitFor({ timeout: 20_000 });
    await page.getByRole('button', { name: '完成' }).click();
    await page.getByLabel('余额').getByText('¥590.00').waitFor();
  });

  it('buys two Token packages with the 50-yuan voucher and the balance', async () => {
    await page.goto(`${server.url}/console/cost/resource`);
    const card = page.getByLabel(`资源包 ${PACKAGE}`);
    await card.getByText('1000 万 tokens').waitFor();
    await card.getByLabel(`购买数量 ${PACKAGE}`).fill('2');
    await card.getByText('¥100.00').waitFor(); // 合计
    await card.getByRole('button', { name: '立即购买' }).click();

    const dialog = page.locator('.ant-modal').filter({ hasText: '支付订单' });
    await dialog.getByText(`${PACKAGE} × 2（¥100.00）`).waitFor();
    await dialog.getByText('可用余额 ¥590.00（现金 ¥500.00 + 赠送金 ¥90.00）').waitFor();
    await dialog.getByRole('combobox', { name: '代金券' }).click();
    await page.getByText(/^新用户专享代金券 · ¥50\.00（无门槛/).click();
    await dialog.getByText('-¥50.00').waitFor();
    await page.screenshot({ path: path.join(shots, '30-pay-dialog.png') });
    await animationsDone(page); // a click while the voucher list closes may land nowhere
    await dialog.getByRole('button', { name: '余额支付 ¥50.00' }).click();

    const confirm = page.locator('.ant-modal-confirm').filter({ hasText: '确认支付 ¥50.00' });
    await confirm.getByText('代金券抵扣 ¥50.00，其余 ¥50.00 从账户余额扣除').waitFor();
    // Clicked once the confirmation has finished opening: a loaded CI run's click mid-animation paid nothing.
    await animationsDone(page);
    await confirm.getByRole('button', { name: '确认支付' }).click();

    await dialog.getByText('支付成功').waitFor({ timeout: 20_000 });
    // Gift credit is spent before cash (DESIGN.md "Money").
    await dialog.getByText('代金券 ¥50.00，赠送金 ¥50.00').waitFor();
    await page.screenshot({ path: path.join(shots, '31-pay-success.png') });
    await dialog.getByRole('button', { name: '完成' }).click();

    const row = page.locator('tr').filter({ hasText: `${PACKAGE} × 2` });
    await row.getByText('2000 万 tokens').first().waitFor();
    expect(await row.getByLabel('剩余 100%').count()).toBe(1);
    await page.screenshot({ path: path.join(shots, '32-resource-packages.png') });
  });

  it('lists the order as 已完成 under 模型账单, and the header balance is 50 yuan lower', async () => {
    await page.goto(`${server.url}/console/cost/bill`);
    await page.getByRole('tab', { name: '模型账单' }).click();
    const row = page.locator('tr').filter({ hasText: `${PACKAGE} × 2（¥100.00）` });
    await row.getByText('已完成').waitFor();
    expect(await row.textContent()).toContain('-50.00'); // the voucher
    await page.getByLabel('余额').getByText('¥540.00').waitFor();
    await page.screenshot({ path: path.join(shots, '33-bill-model.png') });

    await row.getByRole('link', { name: '详情' }).click();
    await page.waitForURL('**/console/cost/bill/model-details/*');
    await page.getByLabel('支付构成').getByText('¥50.00').first().waitFor();
    await page.screenshot({ path: path.join(shots, '34-model-bill-detail.png') });
  });
});
