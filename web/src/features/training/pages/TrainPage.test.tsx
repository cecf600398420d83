import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { act, fireEvent, screen, waitFor, within } from '@testing-library/react';
import { ERRORS, formatYuan, loraEpochCharge, loraPreset, PAGE, type LoraJob } from '@console/contract';
import { session } from '../../../session/store';
import { callsTo, fakeServer, json } from '../../../test/http';
import { renderApp } from '../../../test/render';
import { user } from '../../../test/fixtures/user';
import { DS_EMPTY, DS_PERSON, JOB_ID, JOBS, loraJob, QUOTE, quoteFor, trainingHandler } from '../../../test/fixtures/training';
import { TRAIN_QUOTE_DEBOUNCE_MS } from '../components/TrainQuote';

const TRAIN_PAGE = '/sd/train';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

const field = (label: string) => screen.getByLabelText(label) as HTMLInputElement;
const startButton = () => screen.getByText('开始训练', { selector: 'button span' }).closest('button')!;
/** Role queries walk antd's whole tree and are slow: find by the title instead. */
const dialog = async () => (await screen.findByText('确认开始训练')).closest<HTMLElement>('.ant-modal')!;
const drawer = async () => (await screen.findByText(/^训练任务 · /)).closest<HTMLElement>('.ant-drawer-section')!;

async function chooseDataset(title: string) {
  fireEvent.mouseDown(await screen.findByLabelText('数据集'));
  await waitFor(() => expect(document.querySelector(`.ant-select-item-option[title="${title}"]`)).toBeTruthy());
  fireEvent.click(document.querySelector(`.ant-select-item-option[title="${title}"]`)!);
}

async function chooseBase(title: string) {
  fireEvent.mouseDown(screen.getByLabelText('底模'));
  await waitFor(() => expect(document.querySelector(`.ant-select-item-option[title="${title}"]`)).toBeTruthy());
  fireEvent.click(document.querySelector(`.ant-select-item-option[title="${title}"]`)!);
}

/** The person dataset chosen and its quote on screen, ready to start. */
async function readyToStart() {
  await chooseDataset('我的角色 · 12 张');
  await waitFor(() => expect(startButton().disabled).toBe(false));
}

beforeEach(() => session.setLogin('tok', user));
afterEach(() => vi.unstubAllGlobals());

describe('LoRA training: the new job form', () => {
  it('fills the preset of the chosen dataset’s type and base model, with the name and trigger word from the dataset', async () => {
    const fetch = fakeServer(trainingHandler());
    renderApp(TRAIN_PAGE);
    await chooseDataset('水彩画风 · 30 张');
    await waitFor(() => expect(field('训练轮数').value).toBe('15'));
    expect([field('分辨率').value, field('重复次数').value, field('批大小').value, field('网络维度（Dim）').value]).toEqual(['512', '5', '2', '64']);
    expect(screen.getByTestId('preset-note').textContent).toMatch(/已按「画风」预设（Stable Diffusion 1\.5）/);
    expect(field('模型名称').value).toBe('my_lora'); // no trigger word, a name in Chinese: a file name of letters
    expect((screen.getByTestId('trigger-word') as HTMLInputElement).value).toBe('未设置');
    expect(screen.getByText('有 4 张图片还没有标注')).toBeTruthy();

    await chooseBase('Stable Diffusion XL 1.0');
    await waitFor(() => expect(field('分辨率').value).toBe('1024'));
    expect(field('批大小').value).toBe('1');

    await chooseDataset('我的角色 · 12 张');
    await waitFor(() => expect(field('训练轮数').value).toBe('10'));
    expect([field('重复次数').value, field('网络维度（Dim）').value, field('分辨率').value]).toEqual(['10', '32', '1024']);
    expect(screen.getByTestId('preset-note').textContent).toMatch(/「人物」预设（Stable Diffusion XL 1\.0）/);
    expect(field('模型名称').value).toBe('mychar');
    expect((screen.getByTestId('trigger-word') as HTMLInputElement).value).toBe('mychar');
    await waitFor(() =>
      expect(callsTo(fetch, QUOTE, 'POST').at(-1)!.body).toEqual({ datasetId: DS_PERSON, baseModel: 'sdxl', params: loraPreset('person', 'sdxl') }),
    );
    const quote = quoteFor(12, loraPreset('person', 'sdxl'), 'sdxl');
    await waitFor(() => expect(screen.getByTestId('quote-steps').textContent).toBe(`每轮 ${quote.steps.perEpoch} 步 · 共 ${quote.steps.total} 步（10 轮）`));
    expect(screen.getByTestId('quote-amount').textContent).toBe(formatYuan(quote.amount, { symbol: true }));
  });

  it('a dataset without images is not priced and cannot be started', async () => {
    const fetch = fakeServer(trainingHandler());
    renderApp(TRAIN_PAGE);
    await chooseDataset('空数据集 · 0 张');
    expect(await screen.findByText('该数据集还没有图片，无法训练')).toBeTruthy();
    await new Promise((r) => setTimeout(r, TRAIN_QUOTE_DEBOUNCE_MS + 200));
    expect(callsTo(fetch, QUOTE, 'POST').filter((c) => (c.body as { datasetId: string }).datasetId === DS_EMPTY)).toHaveLength(0);
    expect(startButton().disabled).toBe(true);
  });

  it('an out-of-range parameter shows the schema’s message and sends no quote until it is fixed', async () => {
    const fetch = fakeServer(trainingHandler());
    renderApp(TRAIN_PAGE);
    await readyToStart();
    const quotes = () => callsTo(fetch, QUOTE, 'POST').map((c) => (c.body as { params: { epochs: number; networkAlpha: number } }).params);
    expect(quotes()).toHaveLength(1);

    fireEvent.change(field('训练轮数'), { target: { value: '500' } });
    expect(await screen.findByText('训练轮数最大为 100')).toBeTruthy();
    expect(screen.getByTestId('quote-panel').textContent).toMatch(/参数有误，修正后显示费用/);
    expect(startButton().disabled).toBe(true);
    fireEvent.change(field('网络 Alpha'), { target: { value: '64' } }); // above the dim of 32, an advanced field
    expect(await screen.findByText('高级参数（1 项有误）')).toBeTruthy();
    await new Promise((r) => setTimeout(r, TRAIN_QUOTE_DEBOUNCE_MS + 300));
    expect(quotes()).toHaveLength(1);

    fireEvent.change(field('网络 Alpha'), { target: { value: '16' } });
    fireEvent.change(field('训练轮数'), { target: { value: '20' } });
    await waitFor(() => expect(quotes()).toHaveLength(2));
    expect(quotes()[1]!.epochs).toBe(20);
    // The message leaves with antd's help animation: gone once it has played.
    await waitFor(() => expect(screen.queryByText('训练轮数最大为 100')).toBeNull());
  });
});

describe('LoRA training: starting a job', () => {
  const quote = quoteFor(12, loraPreset('person', 'sd15'), 'sd15');
  const amount = formatYuan(quote.amount, { symbol: true });

  it('the confirmation states the quoted amount held from the cash and how it is settled; confirming starts one job and opens it', async () => {
    const started = loraJob({ status: 'queued', step: 0, epoch: 0, epochs: [], loss: [], log: [], etaSeconds: null, held: quote.amount, charged: '0' });
    const fetch = fakeServer((url, init) => (url.pathname === JOBS && init?.method === 'POST' ? json(200, started) : undefined), trainingHandler([started]));
    const router = renderApp(TRAIN_PAGE);
    await readyToStart();
    expect(screen.getByTestId('quote-amount').textContent).toBe(amount);

    fireEvent.click(startButton());
    const modal = await dialog();
    expect(within(modal).getByTestId('start-amount').textContent).toBe(amount);
    const share = formatYuan(loraEpochCharge(BigInt(quote.amount), 10, 1));
    expect(within(modal).getByTestId('start-terms').textContent).toBe(
      `开始后将从现金余额预扣 ${amount}（赠送金不能用于训练）。每完成一轮结算该轮的份额（约 ¥${share}）；中途取消时已完成轮次照常结算，其余退回；训练失败全部退回。`,
    );

    const ok = within(modal).getByText('确认开始').closest('button')!;
    fireEvent.click(ok);
    fireEvent.click(ok); // a double click: the same start, which the server counts once
    await waitFor(() => expect(router.state.location.search).toBe(`?job=${JOB_ID}`));
    const posts = callsTo(fetch, JOBS, 'POST').map((c) => c.body as { requestId: string });
    expect(posts.length).toBeGreaterThan(0);
    expect(new Set(posts.map((b) => b.requestId)).size).toBe(1);
    expect(posts[0]).toEqual({
      datasetId: DS_PERSON,
      baseModel: 'sd15',
      params: loraPreset('person', 'sd15'),
      name: 'mychar',
      requestId: expect.stringMatching(UUID),
    });
    expect(within(await drawer()).getAllByText('排队中').length).toBeGreaterThan(0);
  });

  it('too little cash: says so in the dialog with a way to recharge, and the next try is a new start', async () => {
    const fetch = fakeServer(
      (url, init) =>
        url.pathname === JOBS && init?.method === 'POST' ? json(400, { code: 40011010, message: ERRORS.TRAIN_INSUFFICIENT_CASH.message }) : undefined,
      trainingHandler(),
    );
    const router = renderApp(TRAIN_PAGE);
    await readyToStart();
    fireEvent.click(startButton());
    const modal = await dialog();
    fireEvent.click(within(modal).getByText('确认开始').closest('button')!);
    expect(await within(modal).findByText(ERRORS.TRAIN_INSUFFICIENT_CASH.message)).toBeTruthy();
    fireEvent.click(within(modal).getByText('确认开始').closest('button')!);
    await waitFor(() => expect(callsTo(fetch, JOBS, 'POST')).toHaveLength(2));
    const [first, second] = callsTo(fetch, JOBS, 'POST').map((c) => (c.body as { requestId: string }).requestId);
    expect(first).not.toBe(second);

    fireEvent.click(within(modal).getByText('去充值').closest('button')!);
    await waitFor(() => expect(router.state.location.pathname).toBe(PAGE.recharge));
  });
});

/** An EventSource the test drives: it records where it connects and pushes the jobs it is given. */
class FakeEventSource {
  static opened: FakeEventSource[] = [];
  onmessage: ((e: MessageEvent) => void) | null = null;
  onerror: (() => void) | null = null;
  closed = false;
  constructor(
    readonly url: string,
    readonly init?: EventSourceInit,
  ) {
    FakeEventSource.opened.push(this);
  }
  close() {
    this.closed = true;
  }
  push(job: LoraJob) {
    act(() => this.onmessage?.(new MessageEvent('message', { data: JSON.stringify(job) })));
  }
}

describe('LoRA training: the job detail', () => {
  beforeEach(() => {
    FakeEventSource.opened = [];
    vi.stubGlobal('EventSource', FakeEventSource);
  });

  it('opens from ?job=, shows progress, money, epochs with samples and files, and follows the event stream until the job ends', async () => {
    const fetch = fakeServer(trainingHandler([loraJob()]));
    renderApp(`${TRAIN_PAGE}?job=${JOB_ID}`);
    const d = await drawer();
    expect(within(d).getByText('150/600')).toBeTruthy();
    expect(within(d).getByText('第 3/10 轮')).toBeTruthy();
    expect(within(d).getByText('7 分 00 秒')).toBeTruthy();
    const epochs = within(d).getAllByTestId('train-epoch');
    expect(epochs.map((e) => e.querySelector('a')!.getAttribute('href'))).toEqual([`${JOBS}/${JOB_ID}/epochs/2/lora`, `${JOBS}/${JOB_ID}/epochs/1/lora`]);
    expect(within(epochs[0]!).getByLabelText('下载第 2 轮 .safetensors（18.0 MB）')).toBeTruthy();
    expect(epochs[0]!.querySelector('img')!.getAttribute('src')).toBe(`${JOBS}/${JOB_ID}/epochs/2/sample`);
    expect(within(d).getByTestId('train-log').textContent).toMatch(/steps: 150\/600 loss=0\.090$/);

    await waitFor(() => expect(FakeEventSource.opened).toHaveLength(1));
    const source = FakeEventSource.opened[0]!;
    expect(source.url).toBe(`${JOBS}/${JOB_ID}/events`);
    expect(source.init?.withCredentials).toBe(true);
    source.push(loraJob({ step: 300, epoch: 5, etaSeconds: 200 }));
    expect(await within(d).findByText('300/600')).toBeTruthy();
    expect(within(d).getByText('第 6/10 轮')).toBeTruthy();

    const listCalls = callsTo(fetch, JOBS).length;
    source.push(loraJob({ status: 'done', step: 600, epoch: 10, etaSeconds: null, charged: '6754', finishedAt: '2026-11-25T08:10:00.000Z' }));
    expect(await within(d).findByText('已完成 10/10 轮')).toBeTruthy();
    expect(source.closed).toBe(true); // the job ended: no reconnecting to it
    await waitFor(() => expect(callsTo(fetch, JOBS).length).toBeGreaterThan(listCalls)); // the list moves it to 已结束
  });

  it('polls the job every 3 s when the event stream fails', async () => {
    const fetch = fakeServer(trainingHandler([loraJob()]));
    renderApp(`${TRAIN_PAGE}?job=${JOB_ID}`);
    await drawer();
    await waitFor(() => expect(FakeEventSource.opened).toHaveLength(1));
    const gets = () => callsTo(fetch, `${JOBS}/${JOB_ID}`).length;
    const before = gets();
    act(() => FakeEventSource.opened[0]!.onerror?.());
    expect(FakeEventSource.opened[0]!.closed).toBe(true);
    await waitFor(() => expect(gets()).toBeGreaterThan(before), { timeout: 5_000 });
    expect(FakeEventSource.opened).toHaveLength(1); // no new stream while polling
  });
});
