/**
 * The accounts journey, in Chromium against the built console: a new account meets the
 * real-name gate when it creates a dataset, certifies on the account page and is brought back; then
 * it creates a child account holding only `gpu`, and the child, logged in with the parent's mobile
 * number, sees the GPU instance list and nothing else it was not granted.
 */
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeConsole, openConsole } from './suite.js';
import { registerInBrowser } from './console.js';
import type { RunningServer } from './server.js';

const shots = process.env.E2E_SCREENSHOTS ?? path.join(tmpdir(), 'console-e2e-screenshots', 'accounts');
const label = (text: string) => new RegExp(`^${[...text].join('\\s*')}$`);

describe('accounts journey', () => {
  let server: RunningServer;
  let browser: Browser;
  let page: Page;
  let parentMobile: string;

  beforeAll(async () => {
    ({ server, browser, page } = await openConsole({ shots, context: true }));
  });
  afterAll(() => closeConsole({ browser, server }));
  const shot = (name: string) => page.screenshot({ path: path.join(shots, `${name}.png`) });

  it('stops an uncertified account at the real-name gate on dataset creation, certifies it and returns it there', async () => {
    parentMobile = await registerInBrowser(page, server.url, '136', 'Team12345');
    await page.goto(`${server.url}/sd/dataset`);
    await page.getByRole('button', { name: '创建数据集' }).click();
    const gate = page.locator('.ant-modal-confirm').filter({ hasText: '提示' });
    await gate.getByText('该操作需要先完成实名认证').waitFor();
    expect(new URL(page.url()).pathname).toBe('/sd/dataset');
    await shot('1-gate');

    // 已认证 while not certified: the dialog says so and nothing opens.
    await gate.getByRole('button', { name: label('已认证') }).click();
    await page.getByText('您尚未完成实名认证').waitFor();
    await page.getByRole('button', { name: '创建数据集' }).click();
    await gate.getByRole('button', { name: label('去认证') }).click();
    await page.waitForURL('**/console/account?tab=checkInfo');

    await page.getByLabel('真实姓名').fill('张三丰');
    await page.getByLabel('身份证号').fill('110105194912310021');
    await page.getByLabel('真实姓名').click();
    await page.getByText('身份证号校验位不正确，请核对后重新输入').waitFor();
    await page.getByLabel('身份证号').fill('11010519491231002X');
    await page.getByRole('button', { name: '下一步' }).click();
    await page.getByText('1101**********002X').waitFor();
    await shot('2-confirm');
    await page.getByRole('button', { name: '确认认证' }).click();

    await page.waitForURL('**/sd/dataset');
    await page.getByText('实名认证成功，已返回之前的页面').waitFor();
    await page.getByRole('button', { name: '创建数据集' }).click();
    await page.waitForURL('**/sd/dataset/create');
    await page.getByRole('heading', { name: '创建数据集' }).waitFor();
    await shot('3-returned');
  });

  it('creates a child with only gpu, who logs in and sees only the GPU instance list', async () => {
    await page.goto(`${server.url}/console/account?tab=children`);
    await page.getByRole('button', { name: /创建子账号/ }).click();
    const dialog = page.locator('.ant-modal').filter({ hasText: '创建子账号' });
    await dialog.getByLabel('子账号名').fill('gpu_only');
    await dialog.getByLabel('登录密码').fill('Kid12345');
    await dialog.getByLabel('管理 GPU 实例').check();
    await shot('4-create-child');
    await dialog.getByRole('button', { name: label('保存') }).click();
    const row = page.locator('tr', { hasText: 'gpu_only' });
    await row.getByText('管理 GPU 实例').waitFor();
    await shot('5-children');

    // Log out, then in as the child.
    await page.getByLabel('账号菜单').hover();
    await page.getByText('退出登录').click();
    await page.waitForURL('**/login');
    await page.getByRole('tab', { name: '子账号登录' }).click();
    await page.getByPlaceholder('主账号的手机号').fill(parentMobile);
    await page.getByPlaceholder('主账号为你创建的子账号名').fill('gpu_only');
    await page.getByPlaceholder('请输入子账号密码').fill('Kid12345');
    await page.getByPlaceholder('请输入子账号密码').press('Enter');
    await page.waitForURL('**/console/gpu-generic');
    await page.getByText('GPU 实例', { exact: true }).first().waitFor();

    const menu = page.getByLabel('控制台导航');
    await expect(menu.getByText('GPU 实例', { exact: true }).count()).resolves.toBe(1);
    for (const hidden of ['镜像应用', 'CPU 实例', '云桌面', '我的数据', '模型服务', '运营管理']) {
      await expect(menu.getByText(hidden, { exact: true }).count(), hidden).resolves.toBe(0);
    }
    await shot('6-child-gpu');

    // Pages it was not granted send it home, whatever the address bar says.
    await page.goto(`${server.url}/console/generic/cpu`);
    await page.waitForURL('**/console/gpu-generic');
    await page.goto(`${server.url}/console/app`);
    await page.waitForURL('**/console/gpu-generic');
  });
});
