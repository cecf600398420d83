/**
 * The AI image area in Chromium: a certified account creates a dataset, uploads images (one of them
 * not an image, refused with the reason), captions one in place, puts the trigger word in front of
 * every caption, finds the export link of the sd-scripts layout; then recharges, trains a LoRA on the
 * dataset (the embedded backend runs 40 times faster than a 4090 here) and watches it to the end,
 * generates an image with that LoRA and finds it in the gallery, and buys an RTX 4090 时长包 in the
 * compute center that the next image is paid from, as the package's history shows; last it runs a
 * ComfyUI workflow on the embedded ComfyUI, follows its nodes to the end and finds its pictures in
 * the gallery under the workflow's name.
 */
import { tmpdir } from 'node:os';
import path from 'node:path';
import { deflateSync, crc32 } from 'node:zlib';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chooseOption, closeConsole, openConsole } from './suite.js';
import { animationsDone, buttonLabel, rechargeInBrowser, registerInBrowser } from './console.js';
import type { RunningServer } from './server.js';

const shots = process.env.E2E_SCREENSHOTS ?? path.join(tmpdir(), 'console-e2e-screenshots', 'datasets');

/** A real PNG in one colour, as a camera or a drawing program would save one. */
function png(width: number, height: number, rgb: [number, number, number]): Buffer {
  const chunk = (type: string, data: Buffer) => {
    const body = Buffer.concat([Buffer.from(type, 'latin1'), data]);
    const out = Buffer.alloc(12 + data.length);
    out.writeUInt32BE(data.length, 0);
    body.copy(out, 4);
    out.writeUInt32BE(crc32(body), 8 + data.length);
    return out;
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr.set([8, 2, 0, 0, 0], 8);
  const row = Buffer.concat([Buffer.from([0]), Buffer.from(Array.from({ length: width }, () => rgb).flat())]);
  const raw = Buffer.concat(Array.from({ length: height }, () => row));
  const signature = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  return Buffer.concat([signature, chunk('IHDR', ihdr), chunk('IDAT', deflateSync(raw)), chunk('IEND', Buffer.alloc(0))]);
}

describe('AI image journey', () => {
  let server: RunningServer;
  let browser: Browser;
  let page: Page;

  beforeAll(async () => {
    ({ server, browser, page } = await openConsole({ shots, env: { IMAGE_BACKEND_SPEEDUP: '40', IMAGE_BACKEND_TICK_MS: '250' }, context: true }));
  });
  afterAll(() => closeConsole({ browser, server }));
  const shot = (name: string) => animationsDone(page).then(() => page.screenshot({ path: path.join(shots, `${name}.png`), fullPage: true }));

  it('creates a dataset as a certified account and uploads images, the non-image refused with its reason', async () => {
    await registerInBrowser(page, server.url, '137', 'Draw12345');
    // Certified through the API with the page's own session (the certification pages have their own journey).
    const certified = await page.evaluate(async () => {
      const authorization = `Bearer ${localStorage.getItem('token')}`;
      const body = JSON.stringify({ name: '张三丰', idNumber: '11010519491231002X' });
      await fetch('/api/v1/certify/personal', { method: 'POST', headers: { authorization, 'content-type': 'application/json' }, body });
      return (await fetch('/api/v1/certify/personal/confirm', { method: 'POST', headers: { authorization } })).status;
    });
    expect(certified).toBe(200);
    await page.goto(`${server.url}/sd/dataset`);
    await page.getByText('还没有数据集').waitFor();
    await page.getByRole('button', { name: '创建数据集' }).click();
    await page.waitForURL('**/sd/dataset/create');
    await page.getByLabel('数据集名称').fill('紫发少女');
    await page.getByLabel('触发词').fill('purplegirl');
    await page.getByLabel('描述').fill('同一角色的多角度图片');
    await shot('1-create');
    await page.getByRole('button', { name: '创建并上传图片' }).click();
    await page.waitForURL('**/sd/dataset/detail/upload?id=*');
    await page.getByText('已有 0 / 512 张图片').waitFor();

    await page
      .getByTestId('dataset-upload')
      .locator('input[type=file]')
      .setInputFiles([
        { name: 'front.png', mimeType: 'image/png', buffer: png(96, 128, [150, 90, 210]) },
        { name: 'side.png', mimeType: 'image/png', buffer: png(128, 96, [90, 60, 160]) },
        { name: 'back.png', mimeType: 'image/png', buffer: png(64, 64, [200, 160, 230]) },
        { name: 'notes.png', mimeType: 'image/png', buffer: Buffer.from('a text file with an image name') },
      ]);
    const summary = page.getByTestId('upload-summary');
    await summary.getByText(/成功 3 张/).waitFor({ timeout: 20_000 });
    await summary.getByText(/「notes.png」：文件不是可用的图片/).waitFor();
    await shot('2-upload');
  });

  it('captions an image in place and puts the trigger word in front of every caption', async () => {
    await page.getByRole('button', { name: '完成，去标注' }).click();
    await page.waitForURL('**/sd/dataset/detail?id=*');
    await page.getByTestId('dataset-count').getByText('3 / 512').waitFor();
    await expect.poll(() => page.getByTestId('dataset-image').count()).toBe(3);
    // Every thumbnail is drawn (the image endpoint answers the session cookie).
    await expect
      .poll(() => page.locator('[data-testid=dataset-image] img').evaluateAll((imgs) => imgs.every((i) => (i as HTMLImageElement).naturalWidth > 0)), {
        timeout: 10_000,
      })
      .toBe(true);

    await page.getByLabel('front.png 的标注').fill('1girl, purple hair, smiling');
    await page.getByLabel('side.png 的标注').click(); // leaving the field saves it
    await page.getByText('标注已保存').waitFor();
    await page.getByRole('checkbox', { name: '只看未标注' }).check();
    await expect.poll(() => page.getByTestId('dataset-image').count()).toBe(2);
    await page.getByRole('checkbox', { name: '只看未标注' }).uncheck();

    await expect.poll(() => page.getByLabel('加在每条标注前面的文字').inputValue()).toBe('purplegirl');
    await page.getByRole('button', { name: '加到开头' }).click();
    await page.getByText('已修改 3 条标注').waitFor();
    await expect.poll(() => page.getByLabel('front.png 的标注').inputValue()).toBe('purplegirl, 1girl, purple hair, smiling');
    await expect.poll(() => page.getByLabel('back.png 的标注').inputValue()).toBe('purplegirl');
    await shot('3-captions');

    await page.getByRole('button', { name: /导\s*出/ }).click();
    const download = page.getByRole('link', { name: /下载 zip/ });
    await download.waitFor();
    expect(await download.getAttribute('href')).toMatch(/\/sd\/datasets\/[0-9a-f-]+\/export\?repeats=10$/);
    const res = await page.evaluate(
      async (href) => {
        const r = await fetch(href!);
        return { status: r.status, type: r.headers.get('content-type'), size: (await r.arrayBuffer()).byteLength };
      },
      await download.getAttribute('href'),
    );
    expect(res).toMatchObject({ status: 200, type: 'application/zip' });
    expect(res.size).toBeGreaterThan(100);

    await page.goto(`${server.url}/sd/dataset`);
    const row = page.locator('tr[data-row-key]').filter({ hasText: '紫发少女' });
    await row.getByText('3 / 512').waitFor();
    await shot('4-list');
  });
  it('trains a LoRA on the dataset, quoted and confirmed first, and watches it to the end', async () => {
    await rechargeInBrowser(browser, page, server.url, 50);
    await page.goto(`${server.url}/sd/train`);
    await chooseOption(page, 'lora-dataset', '紫发少女');
    await expect.poll(() => page.getByTestId('trigger-word').inputValue()).toBe('purplegirl');
    await page.getByLabel('重复次数').fill('1');
    await page.getByLabel('训练轮数').fill('2');
    const amount = page.getByTestId('quote-amount');
    await expect.poll(() => page.getByTestId('quote-steps').textContent(), { timeout: 10_000 }).toMatch(/4/);
    const quoted = (await amount.textContent())!.match(/¥[\d.]+/)![0];
    await shot('5-train-form');
    await page.getByRole('button', { name: /开始训练/ }).click();
    const dialog = page.getByRole('dialog', { name: '确认开始训练' });
    await dialog.getByTestId('start-amount').getByText(quoted).waitFor();
    await animationsDone(page);
    await dialog.getByRole('button', { name: '确认开始' }).click();

    // The job opens in its drawer and follows the trainer live to the end.
    const drawer = page.getByRole('dialog').filter({ hasText: '训练任务 · purplegirl' });
    await drawer.getByText('已完成', { exact: true }).first().waitFor({ timeout: 60_000 });
    await expect.poll(() => drawer.getByTestId('train-epoch').count()).toBe(2);
    await expect
      .poll(() => drawer.locator('[data-testid=train-epoch] img').evaluateAll((imgs) => imgs.every((i) => (i as HTMLImageElement).naturalWidth > 0)), {
        timeout: 10_000,
      })
      .toBe(true);
    await drawer
      .getByTestId('train-log')
      .getByText(/saving checkpoint: .*-000002\.safetensors/)
      .waitFor();
    const lora = drawer.getByRole('link', { name: /下载第 2 轮 \.safetensors/ }).or(drawer.getByRole('button', { name: /下载第 2 轮 \.safetensors/ }));
    await lora.first().waitFor();
    await shot('6-train-done');
    // The whole hold was charged, epoch by epoch: the cash is the ¥50 recharged less the quote.
    const money = await page.evaluate(async () => {
      const r = await fetch('/billing/api/v1/user/money', { headers: { authorization: `Bearer ${localStorage.getItem('token')}` } });
      return ((await r.json()) as { cash: string }).cash;
    });
    expect(Number(money) / 10000).toBeCloseTo(50 - Number(quoted.slice(1)), 2);
  });
  /** Fills the prompt and picks the LoRA trained above on /sd/diffusion. */
  async function promptWithLora() {
    await page.goto(`${server.url}/sd/diffusion`);
    await page.locator('#sd-prompt').fill('purplegirl, 1girl, smiling, garden');
    await chooseOption(page, 'sd-lora', 'purplegirl-000002');
    await page.getByTestId('lora-name').getByText('purplegirl-000002').waitFor();
    await page.getByTestId('quote-total').waitFor({ timeout: 10_000 });
  }

  it('generates an image with the trained LoRA and finds it in the gallery', async () => {
    await promptWithLora();
    await shot('7-diffusion-form');
    await page
      .getByTestId('quote-panel')
      .getByRole('button', { name: /生\s*成/ })
      .click();
    const gallery = page.getByTestId('gallery-image');
    await expect.poll(() => gallery.count(), { timeout: 30_000 }).toBe(1);
    await expect
      .poll(
        () =>
          gallery
            .locator('img')
            .first()
            .evaluate((i) => (i as HTMLImageElement).naturalWidth),
        { timeout: 10_000 },
      )
      .toBe(320); // the grid shows the thumbnail
    await gallery
      .getByText(/purplegirl-000002/)
      .first()
      .waitFor();
    await shot('8-gallery');
  });

  it('buys an RTX 4090 时长包 in the compute center and the next image is paid from it', async () => {
    await page.goto(`${server.url}/compute/center`);
    const card = page.getByLabel('资源包 RTX 4090 时长包 10 小时');
    await card.getByRole('button', { name: '立即购买' }).click();
    await animationsDone(page);
    await page.locator('.ant-modal-confirm').getByRole('button', { name: '确认购买' }).click();
    const dialog = page.locator('.ant-modal').filter({ hasText: '支付订单' });
    await dialog.getByRole('button', { name: /余额支付 ¥/ }).click();
    await page
      .locator('.ant-modal-confirm')
      .filter({ hasText: /确认支付 ¥/ })
      .getByRole('button', { name: '确认支付' })
      .click();
    await dialog.getByText('支付成功').waitFor({ timeout: 20_000 });
    await dialog.getByRole('button', { name: buttonLabel('完成') }).click();

    await promptWithLora();
    await page.getByTestId('quote-package').waitFor();
    await page
      .getByTestId('quote-panel')
      .getByRole('button', { name: /生\s*成/ })
      .click();
    await expect.poll(() => page.getByTestId('gallery-image').count(), { timeout: 30_000 }).toBe(2);

    await page.goto(`${server.url}/compute/center?tab=mine`);
    await page.getByRole('link', { name: '详情 RTX 4090 时长包 10 小时' }).click();
    await page.waitForURL('**/compute/detail?id=*');
    await page.locator('tr').filter({ hasText: 'AI 绘图' }).first().waitFor({ timeout: 10_000 });
    await shot('9-package-detail');
  });

  it('runs a ComfyUI workflow, following its nodes to the end, and finds its picture in the gallery', async () => {
    await page.goto(`${server.url}/comfyui`);
    await page
      .getByRole('button', { name: /新建工作流/ })
      .first()
      .click();
    const named = page.locator('.ant-modal').filter({ hasText: '工作流名称' });
    await named.getByPlaceholder('例如：水彩风人像').fill('紫色猫咪');
    await named.getByRole('button', { name: buttonLabel('创建并编辑') }).click();
    await page.getByText('Load Checkpoint').first().waitFor();
    await page.getByText('现金预扣').first().waitFor(); // the quote came
    await page
      .getByRole('button', { name: /运\s*行/ })
      .first()
      .click();
    const confirm = page.locator('.ant-modal-confirm').filter({ hasText: '运行工作流「紫色猫咪」' });
    await confirm.getByTestId('run-hold').waitFor();
    await confirm.getByRole('button', { name: buttonLabel('确认运行') }).click();
    const run = page.locator('.ant-card').filter({ hasText: '运行记录' });
    await run.getByText('已完成').first().waitFor({ timeout: 60_000 });
    await run.getByText('节点 7/7 已完成').first().waitFor();
    await shot('10-comfyui-run');

    await page.goto(`${server.url}/sd/diffusion`);
    await page.getByText('工作流：紫色猫咪').first().waitFor({ timeout: 10_000 });
    await expect.poll(() => page.getByTestId('gallery-image').count()).toBe(3);
  });
});
