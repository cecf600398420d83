/**
 * The newcomer's journey of the foundation issue, in Debian's Chromium against the built console
 * and a real server: redirect to the GPU page, register with an SMS code read from the outbox,
 * land logged in, survive a reload, log out.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeConsole, openConsole } from './suite.js';
import type { RunningServer } from './server.js';

const shots = path.join(path.dirname(fileURLToPath(import.meta.url)), 'screenshots');

describe('newcomer journey', () => {
  let server: RunningServer;
  let browser: Browser;
  let page: Page;

  beforeAll(async () => {
    ({ server, browser, page } = await openConsole({ shots }));
  });
  afterAll(() => closeConsole({ browser, server }));

  it('redirects the root to the GPU cloud page', async () => {
    await page.goto(server.url + '/');
    await page.waitForURL('**/stats/cloud/gpu');
    await page.getByText('新用户').first().waitFor({ state: 'visible' });
    await page.screenshot({ path: path.join(shots, '01-gpu-page.png') });
  });

  it('registers with an SMS code from the outbox and lands on the GPU page logged in', async () => {
    const mobile = `137${String(Date.now()).slice(-8)}`;
    await page.goto(server.url + '/login');
    await page.getByRole('link', { name: '立即注册' }).click();
    await page.waitForURL('**/register');

    await page.getByPlaceholder('请输入手机号').fill(mobile);
    await page.getByRole('button', { name: '获取验证码' }).click();
    await page.getByRole('button', { name: /秒后重新获取/ }).waitFor();

    const outbox = (await (await fetch(`${server.url}/dev/outbox?to=${mobile}`)).json()) as { items: { code: string; text: string }[] };
    const code = outbox.items[0]!.code;
    expect(code).toMatch(/^\d{6}$/);
    // The same code is in the server log, where a person running `npm start` reads it.
    expect(server.logs.join('')).toContain(code);

    await page.getByPlaceholder('6 位验证码').fill(code);
    await page.getByPlaceholder('设置登录密码').fill('Journey123');
    await page.getByRole('checkbox', { name: /我已阅读并同意/ }).check();
    await page.screenshot({ path: path.join(shots, '02-register.png') });
    await page
      .getByRole('button', { name: '注 册' })
      .or(page.getByRole('button', { name: '注册' }))
      .click();

    await page.waitForURL('**/stats/cloud/gpu');
    const masked = `${mobile.slice(0, 3)}****${mobile.slice(-4)}`;
    await page.getByText(masked).first().waitFor();
    await page.screenshot({ path: path.join(shots, '03-logged-in.png') });

    await page.reload();
    await page.getByText(masked).first().waitFor();
    const stored = await page.evaluate(() => JSON.parse(localStorage.getItem('user') ?? 'null'));
    expect(stored?.mobile).toBe(mobile);
  });

  it('logs out from the account menu and the session no longer works', async () => {
    const token = await page.evaluate(() => localStorage.getItem('token'));
    expect(token).toBeTruthy();
    await page.getByLabel('账号菜单').hover();
    await page.getByText('退出登录').click();
    await page.waitForURL('**/login**');
    expect(await page.evaluate(() => localStorage.getItem('token'))).toBeNull();
    const me = await fetch(`${server.url}/userapi/api/v2.1/users/me/info`, { headers: { authorization: `Bearer ${token}` } });
    expect(me.status).toBe(401);
    expect(((await me.json()) as { code: number }).code).toBe(40100004);

    // A protected page now sends the visitor to login and remembers where they were going.
    await page.goto(server.url + '/console/gpu-generic');
    await page.waitForURL(/\/login\?redirect=/);
    await page.screenshot({ path: path.join(shots, '04-logged-out.png') });
  });
});
