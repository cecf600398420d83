import { beforeEach, describe, expect, it } from 'vitest';
import { fireEvent, screen, waitFor, within } from '@testing-library/react';
import { DIFFUSION_DEFAULTS, ERRORS, PAGE, type DiffusionParams, type DiffusionTask } from '@console/contract';
import { session } from '../../../session/store';
import { callsTo, fakeServer, json } from '../../../test/http';
import { renderApp } from '../../../test/render';
import { user } from '../../../test/fixtures/user';
import { diffusionHandler, GEN_QUOTE, genImage, genQuoteFor, genTask, IMAGES, LORA_OPTIONS, TASK_ID, TASKS } from '../../../test/fixtures/diffusion';
import { DIFFUSION_QUOTE_DEBOUNCE_MS } from '../components/DiffusionSubmit';

const DIFFUSION_PAGE = '/sd/diffusion';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const SD15 = DIFFUSION_DEFAULTS.sd15;
const pricedOf = (d: typeof SD15) => ({ width: d.width, height: d.height, steps: d.steps, batchCount: d.batchCount });

const field = (label: string) => screen.getByLabelText(label) as HTMLInputElement;
const generateButton = () => screen.getByText('生成', { selector: 'button span' }).closest('button')!;
const loraNames = () => screen.queryAllByTestId('lora-name').map((e) => e.textContent);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function chooseOption(label: string, title: string) {
  const input = (await screen.findByLabelText(label)) as HTMLInputElement;
  await waitFor(() => expect(input.disabled).toBe(false)); // the LoRAs load first
  fireEvent.mouseDown(input);
  await waitFor(() => expect(document.querySelector(`.ant-select-item-option[title="${title}"]`)).toBeTruthy());
  fireEvent.click(document.querySelector(`.ant-select-item-option[title="${title}"]`)!);
}

/** The prompt typed and its price on screen, ready to generate. */
async function readyToGenerate(prompt = 'a cat in the rain') {
  fireEvent.change(await screen.findByLabelText('提示词'), { target: { value: prompt } });
  await waitFor(() => expect(generateButton().disabled).toBe(false));
}

beforeEach(() => session.setLogin('tok', user));

describe('LoRA 生图: the form', () => {
  it('a new base model applies its default size, steps and CFG and drops the LoRAs of the other family', async () => {
    fakeServer(diffusionHandler());
    renderApp(DIFFUSION_PAGE);
    await chooseOption('LoRA', '水彩画风');
    await chooseOption('LoRA', 'mychar-000010');
    expect(loraNames()).toEqual(['水彩画风', 'mychar-000010']);
    expect([field('宽度').value, field('高度').value, field('采样步数').value, field('CFG').value]).toEqual(['512', '512', '20', '7.0']);
    // A trained LoRA's trigger word is offered for the prompt.
    fireEvent.click(screen.getByText('插入到提示词').closest('button')!);
    await waitFor(() => expect(field('提示词').value).toBe('mychar'));
    expect(screen.queryByText('插入到提示词')).toBeNull();

    await chooseOption('底模', 'Stable Diffusion XL 1.0');
    await waitFor(() => expect(field('宽度').value).toBe('1024'));
    expect([field('高度').value, field('采样步数').value, field('CFG').value]).toEqual(['1024', '25', '6.0']);
    expect(loraNames()).toEqual([]);
    expect(await screen.findByText(/已移除不适用于该底模的 LoRA：水彩画风、mychar-000010/)).toBeTruthy();

    // The picker offers only what fits the base model now.
    fireEvent.mouseDown(field('LoRA'));
    await waitFor(() => expect(document.querySelector('.ant-select-item-option[title="赛博朋克"]')).toBeTruthy());
    const dropdown = document.getElementById('sd-lora_list')!.closest('.ant-select-dropdown')!;
    const offered = [...dropdown.querySelectorAll('.ant-select-item-option')].map((o) => o.getAttribute('title'));
    expect(offered).toEqual(['xlchar-000005', '赛博朋克', '黄昏暖光']);
  });

  it('prices the task before a prompt is written; an invalid value shows the schema’s message and sends no quote until it is fixed; a new prompt asks no new price', async () => {
    const fetch = fakeServer(diffusionHandler());
    renderApp(DIFFUSION_PAGE);
    const quotes = () => callsTo(fetch, GEN_QUOTE, 'POST').map((c) => c.body as DiffusionParams);
    // No prompt yet: the price shows, 生成 waits for the prompt.
    await waitFor(() => expect(quotes()).toHaveLength(1));
    expect(quotes()[0]).toEqual({ baseModel: 'sd15', ...pricedOf(SD15) });
    expect(await screen.findByTestId('quote-total')).toBeTruthy();
    expect(generateButton().disabled).toBe(true);
    await readyToGenerate();
    expect(quotes()).toHaveLength(1);
    const quote = genQuoteFor({ baseModel: 'sd15', ...SD15 });
    expect(screen.getByTestId('quote-total').textContent).toBe(`¥${(Number(quote.total) / 10000).toFixed(2)}`);
    expect(screen.getByTestId('quote-per-image').textContent).toBe('每张 ¥0.01');
    expect(screen.getByTestId('quote-seconds').textContent).toBe(`预计每张 ${quote.seconds} 秒，共约 2 秒（不含排队）`);

    fireEvent.change(field('宽度'), { target: { value: '500' } });
    expect(await screen.findByText('宽度应为 64 的倍数')).toBeTruthy();
    expect(screen.getByTestId('quote-panel').textContent).toMatch(/参数有误，修正后显示费用：宽度应为 64 的倍数/);
    expect(generateButton().disabled).toBe(true);
    fireEvent.change(field('提示词'), { target: { value: 'a dog in the snow' } });
    await sleep(DIFFUSION_QUOTE_DEBOUNCE_MS + 300);
    expect(quotes()).toHaveLength(1);

    fireEvent.change(field('宽度'), { target: { value: '768' } });
    await waitFor(() => expect(quotes()).toHaveLength(2));
    expect(quotes()[1]).toMatchObject({ width: 768, height: 512 });
    expect(quotes()[1]).not.toHaveProperty('prompt');
    await waitFor(() => expect(screen.queryByText('宽度应为 64 的倍数')).toBeNull());
    await waitFor(() => expect(generateButton().disabled).toBe(false));
  });
});

describe('LoRA 生图: the gallery', () => {
  it('复用参数 fills the form with the image’s parameters, its seed and LoRAs, and leaves out a LoRA no longer offered', async () => {
    const image = genImage();
    const orphan = genImage({
      id: 'b0b00000-0000-4000-8000-000000000002',
      params: { ...image.params, prompt: 'old one', loras: [{ source: 'job', jobId: 'e0e00000-0000-4000-8000-000000000000', epoch: 3, weight: 1 }] },
      loras: [{ source: 'job', ref: 'e0e00000-0000-4000-8000-000000000000', name: 'oldchar-000003', weight: 1 }],
    });
    const fetch = fakeServer(diffusionHandler({ images: [image, orphan] }));
    renderApp(DIFFUSION_PAGE);
    await chooseOption('底模', 'Stable Diffusion XL 1.0');
    await waitFor(() => expect(field('宽度').value).toBe('1024'));
    const [card] = await screen.findAllByTestId('gallery-image');
    expect(within(card!).getByText('512×768 · 种子 12345')).toBeTruthy();
    expect(within(card!).getByText('mychar-000009:0.7')).toBeTruthy();
    expect(within(card!).getByText('下载').closest('a')!.getAttribute('href')).toBe(`${IMAGES}/${image.id}/file?download=1`);

    fireEvent.click(within(card!).getByText('复用参数').closest('button')!);
    await waitFor(() => expect(field('提示词').value).toBe(image.params.prompt));
    expect(field('反向提示词').value).toBe('lowres, blurry');
    expect(field('底模').closest('.ant-select')!.textContent).toContain('Stable Diffusion 1.5');
    expect(field('采样器').closest('.ant-select')!.textContent).toContain('Euler a');
    expect([field('宽度').value, field('高度').value, field('采样步数').value, field('CFG').value, field('种子').value]).toEqual([
      '512',
      '768',
      '28',
      '7.5',
      '12345',
    ]);
    expect(loraNames()).toEqual(['mychar-000009', '水彩画风']);
    expect(field('mychar-000009 的权重').value).toBe('0.70');
    expect(field('水彩画风 的权重').value).toBe('0.50');
    // What the form now holds is exactly what made the image.
    const { baseModel, width, height, steps } = image.params;
    await waitFor(() => expect(callsTo(fetch, GEN_QUOTE, 'POST').at(-1)?.body).toEqual({ baseModel, width, height, steps, batchCount: 1 }));

    fireEvent.click(within(screen.getAllByTestId('gallery-image')[1]!).getByText('复用参数').closest('button')!);
    expect(await screen.findByText('以下 LoRA 已不可用，未填入：oldchar-000003')).toBeTruthy();
    await waitFor(() => expect(field('提示词').value).toBe('old one'));
    expect(loraNames()).toEqual([]);
  });

  it('says what to do when there is nothing yet, and there is no last seed to reuse', async () => {
    fakeServer(diffusionHandler({ loras: LORA_OPTIONS.filter((o) => o.source === 'public') }));
    renderApp(DIFFUSION_PAGE);
    expect(await screen.findByText(/画廊里还没有图片/)).toBeTruthy();
    expect(await screen.findByText(/还没有生成任务/)).toBeTruthy();
    expect((await screen.findByText('去训练自己的 LoRA')).closest('a')!.getAttribute('href')).toBe(PAGE.sdTrain);
    expect((screen.getByLabelText('使用上一张图的种子') as HTMLButtonElement).disabled).toBe(true);
  });
});

describe('LoRA 生图: generating', () => {
  it('a double click submits once, with one requestId; the next submit has a new one', async () => {
    const created = genTask({ status: 'queued', done: 0, step: 0, batchCount: 1, held: '100', charged: '0' });
    const fetch = fakeServer((url, init) => (url.pathname === TASKS && init?.method === 'POST' ? json(200, created) : undefined), diffusionHandler());
    renderApp(DIFFUSION_PAGE);
    await chooseOption('LoRA', '水彩画风');
    await readyToGenerate();
    fireEvent.click(generateButton());
    fireEvent.click(generateButton());
    expect(await screen.findByText('已提交 1 张图片的生成任务，可在生成队列查看进度')).toBeTruthy();
    const posts = () => callsTo(fetch, TASKS, 'POST').map((c) => c.body as DiffusionParams & { requestId: string });
    expect(posts()).toHaveLength(1);
    expect(posts()[0]).toEqual({
      prompt: 'a cat in the rain',
      baseModel: 'sd15',
      loras: [{ source: 'public', id: 'watercolor', weight: 1 }],
      ...SD15,
      requestId: expect.stringMatching(UUID),
    });

    await waitFor(() => expect(generateButton().disabled).toBe(false));
    fireEvent.click(generateButton());
    await waitFor(() => expect(posts()).toHaveLength(2));
    expect(posts()[1]!.requestId).not.toBe(posts()[0]!.requestId);
  });

  it('keeps the requestId on a retry after a network error, offers 去充值 on too little cash and starts afresh after it', async () => {
    let calls = 0;
    const fetch = fakeServer((url, init) => {
      if (url.pathname !== TASKS || init?.method !== 'POST') return undefined;
      calls++;
      if (calls === 1) throw new TypeError('Failed to fetch');
      return json(400, { code: ERRORS.DIFFUSION_INSUFFICIENT_CASH.code, message: ERRORS.DIFFUSION_INSUFFICIENT_CASH.message });
    }, diffusionHandler());
    const router = renderApp(DIFFUSION_PAGE);
    await readyToGenerate();
    fireEvent.click(generateButton());
    expect(await screen.findByText('网络异常，请检查网络连接')).toBeTruthy();
    await waitFor(() => expect(generateButton().disabled).toBe(false));
    fireEvent.click(generateButton());
    expect(await screen.findByText(ERRORS.DIFFUSION_INSUFFICIENT_CASH.message)).toBeTruthy();
    await waitFor(() => expect(generateButton().disabled).toBe(false));
    fireEvent.click(generateButton());
    await waitFor(() => expect(callsTo(fetch, TASKS, 'POST')).toHaveLength(3));
    const [first, second, third] = callsTo(fetch, TASKS, 'POST').map((c) => (c.body as { requestId: string }).requestId);
    expect(second).toBe(first); // the first may have made a task: the retry finds it instead of making another
    expect(third).not.toBe(second); // refused: nothing was made

    fireEvent.click(screen.getByText('去充值').closest('button')!);
    await waitFor(() => expect(router.state.location.pathname).toBe(PAGE.recharge));
  });

  it('asks first when the cash held is ¥1 or more, saying what the 时长包 pays', async () => {
    const fetch = fakeServer((url, init) => {
      // Two of the eight paid by the account's 时长包, six held from the cash.
      if (url.pathname === GEN_QUOTE)
        return json(200, { seconds: 4.5, gpuName: 'RTX 4090', ratePerHour: '396000', perImage: '2000', packageImages: 2, total: '12000' });
      if (url.pathname === TASKS && init?.method === 'POST') return json(200, genTask({ status: 'queued', batchCount: 8 }));
      return undefined;
    }, diffusionHandler());
    renderApp(DIFFUSION_PAGE);
    const count = (await screen.findByText('生成数量')).closest<HTMLElement>('.ant-form-item')!;
    fireEvent.click(within(count).getByText('8'));
    await readyToGenerate();
    fireEvent.click(generateButton());
    fireEvent.click(generateButton()); // a double click: one confirmation
    const dialog = (await screen.findByText(/^将生成 8 张图片/)).closest<HTMLElement>('.ant-modal')!;
    expect(screen.getAllByText(/^将生成 8 张图片/)).toHaveLength(1);
    expect(screen.getByTestId('quote-package').textContent).toBe('其中 2 张由 RTX 4090 时长包支付，现金只预扣其余 6 张');
    expect(dialog.textContent).toContain('将生成 8 张图片，从现金余额预扣 ¥1.20（每张 ¥0.20；其中 2 张由 RTX 4090 时长包支付，现金只预扣其余 6 张）');
    expect(callsTo(fetch, TASKS, 'POST')).toHaveLength(0);
    fireEvent.click(within(dialog).getByText('确认生成', { selector: 'button span' }).closest('button')!);
    await waitFor(() => expect(callsTo(fetch, TASKS, 'POST')).toHaveLength(1));
    expect((callsTo(fetch, TASKS, 'POST')[0]!.body as DiffusionParams).batchCount).toBe(8);
  });
});

describe('LoRA 生图: the queue', () => {
  it('follows a running task every second; when it ends the gallery and the finished list are fetched again', async () => {
    const tasks: DiffusionTask[] = [genTask()];
    const state = { tasks, images: [] as ReturnType<typeof genImage>[] };
    const fetch = fakeServer(diffusionHandler(state));
    renderApp(DIFFUSION_PAGE);
    const row = await screen.findByTestId('diffusion-task');
    expect(within(row).getByTestId('task-progress').textContent).toBe('第 2/4 张 · 步数 10/20');
    // The queue is the form's own tasks: workflow runs are followed on /comfyui.
    expect(new Set(callsTo(fetch, TASKS, 'GET').map((c) => c.url.searchParams.get('kind')))).toEqual(new Set(['txt2img']));

    state.tasks = [genTask({ done: 2, step: 5 })];
    await waitFor(() => expect(screen.getByTestId('task-progress').textContent).toBe('第 3/4 张 · 步数 5/20'));

    const galleryCalls = callsTo(fetch, IMAGES).length;
    const image = genImage({ taskId: TASK_ID, params: { ...genImage().params, prompt: 'a cat in the rain', loras: [] }, loras: [] });
    state.images = [image];
    state.tasks = [
      genTask({
        status: 'failed',
        done: 2,
        step: 0,
        charged: '200',
        refunded: '200',
        error: 'GPU 显存不足',
        images: [image],
        finishedAt: '2026-11-25T08:01:00.000Z',
      }),
    ];
    expect(await screen.findByText('失败原因：GPU 显存不足（未生成部分已退款）')).toBeTruthy();
    expect(screen.queryByTestId('diffusion-task')).toBeNull();
    expect(callsTo(fetch, IMAGES).length).toBeGreaterThan(galleryCalls);
    expect(await screen.findByTestId('gallery-image')).toBeTruthy();
    // ♻️ takes the newest image's seed.
    fireEvent.click(screen.getByLabelText('使用上一张图的种子'));
    expect(field('种子').value).toBe(String(image.seed));
  });
});
