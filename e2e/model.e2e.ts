/**
 * The model service in Chromium against the built console (issue 14): a new account recharges ¥50,
 * creates an API key (the secret shown once), calls the /v1 gateway with it as a program would,
 * opens the square and goes from a model to the playground, chats and watches the answer stream in
 * with its tokens and cost, then finds both calls and their cost in 用量统计 and in the model bill
 * of the day.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeConsole, openConsole } from './suite.js';
import { animationsDone, buttonLabel, rechargeInBrowser, registerInBrowser } from './console.js';
import type { RunningServer } from './server.js';

const shots = path.join(path.dirname(fileURLToPath(import.meta.url)), 'screenshots');

describe('model service journey', () => {
  let server: RunningServer;
  let browser: Browser;
  let page: Page;
  let secret = '';

  beforeAll(async () => {
    // A slow enough pace that the answer is seen arriving piece by piece.
    ({ server, browser, page } = await openConsole({ shots, env: { MODEL_EMBEDDED_TOKENS_PER_SECOND: '20' } }));
  });
  afterAll(() => closeConsole({ browser, server }));

  it('registers and recharges ¥50', async () => {
    await registerInBrowser(page, server.url, '136', 'Model1234');
    await rechargeInBrowser(browser, page, server.url, 50);
  });

  it('creates an API key whose secret is shown once, and calls /v1 with it', async () => {
    await page.goto(`${server.url}/model/key`);
    await page
      .getByRole('button', { name: /新建密钥/ })
      .first()
      .click();
    await animationsDone(page);
    await page.getByLabel('密钥名称').fill('e2e 脚本');
    await page
      .locator('.ant-modal')
      .getByRole('button', { name: buttonLabel('创建') })
      .click();
    const shown = page.locator('.ant-modal').filter({ hasText: '密钥只显示这一次' });
    await shown.waitFor();
    secret = await shown.getByLabel('完整密钥').inputValue();
    expect(secret).toMatch(/^sk-[0-9A-Za-z]{48}$/);
    await animationsDone(page);
    await page.screenshot({ path: path.join(shots, 'model-key-secret.png') });
    await shown.getByRole('button', { name: '我已保存，关闭' }).click();
    await expect.poll(() => page.getByLabel('完整密钥').count()).toBe(0);
    expect(await page.content()).not.toContain(secret);
    await page.getByText('e2e 脚本').waitFor();

    const res = await fetch(`${server.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${secret}` },
      body: JSON.stringify({ model: 'qwen-mini-sim', messages: [{ role: 'user', content: 'hello' }], max_tokens: 8 }),
    });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { usage: { total_tokens: number } };
    expect(body.usage.total_tokens).toBeGreaterThan(0);
  });

  it('goes from the square to the playground and watches an answer stream in, with its tokens and cost', async () => {
    await page.goto(`${server.url}/model/square`);
    const card = page.locator('.ant-card').filter({ hasText: 'qwen-mini-sim' });
    await card.waitFor();
    await page.screenshot({ path: path.join(shots, 'model-square.png') });
    await card.getByRole('button', { name: /在线体验/ }).click();
    await page.waitForURL('**/model/experience?model=qwen-mini-sim');

    const input = page.getByPlaceholder('输入消息，Enter 发送，Shift + Enter 换行');
    await input.fill('介绍一下 GPU 云服务器');
    await input.press('Enter');
    // Mid-answer: the stop button is there and the text grows.
    const stop = page.getByRole('button', { name: /停\s*止/ });
    await stop.waitFor();
    await page.screenshot({ path: path.join(shots, 'model-playground-streaming.png') });
    await page.getByText(/输入 \d+ Tokens · 输出 \d+ Tokens/).waitFor({ timeout: 60_000 });
    await expect.poll(() => stop.count()).toBe(0);
    await page
      .getByText(/约 ¥\d/)
      .first()
      .waitFor();
    await page.screenshot({ path: path.join(shots, 'model-playground.png') });

    await page.getByRole('button', { name: /查看代码/ }).click();
    const drawer = page.locator('.ant-drawer');
    await drawer.getByText('cURL').click();
    await expect.poll(() => drawer.getByLabel('示例代码').textContent()).toContain('/v1/chat/completions');
    await page.screenshot({ path: path.join(shots, 'model-playground-code.png') });
    await page.keyboard.press('Escape');
  });

  it('shows both calls and their cost in 用量统计 and in the model bill of the day', async () => {
    await page.goto(`${server.url}/model/stats`);
    const calls = page.locator('.ant-table-row').filter({ hasText: 'qwen-mini-sim' });
    await calls.first().waitFor();
    await page.screenshot({ path: path.join(shots, 'model-stats.png'), fullPage: true });
    await expect.poll(() => calls.filter({ hasText: '在线体验' }).count(), { timeout: 20_000 }).toBeGreaterThan(0);
    await expect.poll(() => calls.filter({ hasText: 'e2e 脚本' }).count()).toBeGreaterThan(0);
    await page.screenshot({ path: path.join(shots, 'model-stats.png'), fullPage: true });

    await page.goto(`${server.url}/console/cost/bill?tab=usage`);
    await page.getByRole('link', { name: '详情' }).first().click();
    await page.waitForURL(/model-details\/\d{8}$/);
    await page.locator('.ant-table-row').filter({ hasText: '在线体验' }).first().waitFor();
    await page.locator('.ant-table-row').filter({ hasText: 'e2e 脚本' }).first().waitFor();
    await page.screenshot({ path: path.join(shots, 'model-day-bill.png'), fullPage: true });
  });
});
