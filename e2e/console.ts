/** Steps several browser journeys share: a new account through the register screen, a sandbox recharge. */
import type { Browser, Page } from 'playwright-core';

/** Registers a fresh mobile number on /register with the code from the dev outbox; ends on the GPU page. */
export async function registerInBrowser(page: Page, baseUrl: string, prefix: string, password: string): Promise<string> {
  const mobile = `${prefix}${String(Date.now()).slice(-8)}`;
  await page.goto(`${baseUrl}/register`);
  await page.getByPlaceholder('请输入手机号').fill(mobile);
  await page.getByRole('button', { name: '获取验证码' }).click();
  await page.getByRole('button', { name: /秒后重新获取/ }).waitFor();
  const outbox = (await (await fetch(`${baseUrl}/dev/outbox?to=${mobile}`)).json()) as { items: { code: string }[] };
  await page.getByPlaceholder('6 位验证码').fill(outbox.items[0]!.code);
  await page.getByPlaceholder('设置登录密码').fill(password);
  await page.getByRole('checkbox', { name: /我已阅读并同意/ }).check();
  await page.getByRole('button', { name: /注\s*册/ }).click();
  await page.waitForURL('**/stats/cloud/gpu');
  return mobile;
}

/** Pays a QR on the embedded sandbox's scan page, as a payer's phone would, in a page of its own. */
export async function payOnSandboxPage(browser: Browser, scanUrl: string): Promise<void> {
  const wallet = await browser.newPage({ locale: 'zh-CN' });
  await wallet.goto(scanUrl);
  await wallet.getByRole('button', { name: '确认支付' }).click();
  await wallet.getByText('支付成功，请返回控制台查看').waitFor();
  await wallet.close();
}

/** Antd puts a space between the two characters of a two-character button label. */
export const buttonLabel = (text: string) => new RegExp(`^${[...text].join('\\s*')}$`);

/** Recharges a preset amount on /console/recharge and pays it on the sandbox scan page. */
export async function rechargeInBrowser(browser: Browser, page: Page, baseUrl: string, yuan: number): Promise<void> {
  await page.goto(`${baseUrl}/console/recharge`);
  await page.getByRole('button', { name: `¥${yuan}`, exact: true }).click();
  await page.getByRole('button', { name: new RegExp(`立即充值 ¥${yuan}\\.00`) }).click();
  const scanUrl = await page.getByRole('link', { name: '打开沙箱支付页' }).getAttribute('href');
  await payOnSandboxPage(browser, scanUrl!);
  await page.getByText('充值成功').waitFor({ timeout: 20_000 });
  await page.getByRole('button', { name: buttonLabel('完成') }).click();
}

/** Resolves once no finite animation runs: a click during a dialog's opening animation may land nowhere. */
export function animationsDone(page: Page) {
  return page.waitForFunction(() => document.getAnimations().every((a) => a.playState !== 'running' || a.effect?.getTiming().iterations === Infinity));
}

/** How many colours the remote desktop's canvas shows (1: nothing drawn yet). */
export function canvasColours(page: Page): Promise<number> {
  return page.evaluate(() => {
    const canvas = document.querySelector<HTMLCanvasElement>('[data-testid=remote-desktop] canvas');
    if (!canvas || !canvas.width) return 0;
    const data = canvas.getContext('2d')!.getImageData(0, 0, canvas.width, canvas.height).data;
    const seen = new Set<number>();
    for (let i = 0; i < data.length && seen.size < 10; i += 4 * 97) seen.add((data[i]! << 16) | (data[i + 1]! << 8) | data[i + 2]!);
    return seen.size;
  });
}
