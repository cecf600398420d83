import { beforeEach, describe, expect, it } from 'vitest';
import { fireEvent, screen, waitFor, within } from '@testing-library/react';
import { defaultComfyGraph, ERRORS, PAGE, type ComfyGraph, type ComfyQuote } from '@console/contract';
import { session } from '../../../session/store';
import { callsTo, fakeServer, json } from '../../../test/http';
import { renderApp } from '../../../test/render';
import { user } from '../../../test/fixtures/user';
import { diffusionHandler, genImage, IMAGES, TASKS } from '../../../test/fixtures/diffusion';
import { instance } from '../../../test/fixtures/instances';
import { framable, siteOf } from '../components/ComfyInstances';
import { COMFY_QUOTE, comfyHandler, comfyQuoteFor, RUN_ID, runTask, RUNS, WORKFLOW_ID, WORKFLOWS, workflow } from '../../../test/fixtures/comfyui';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const EDITOR = `${PAGE.comfyui}?workflow=${WORKFLOW_ID}`;

const button = (name: string, within_: HTMLElement = document.body) => within(within_).getByText(name, { selector: 'button span' }).closest('button')!;
const quoteGraphs = (fetch: ReturnType<typeof fakeServer>) => callsTo(fetch, COMFY_QUOTE, 'POST').map((c) => (c.body as { graph: ComfyGraph }).graph);

/** Puts `text` into the page's hidden file input as `name`, as picking the file in the dialog does. */
function pickFile(name: string, text: string) {
  const input = document.querySelector<HTMLInputElement>('input[type="file"]')!;
  fireEvent.change(input, { target: { files: [new File([text], name, { type: 'application/json' })] } });
}

beforeEach(() => session.setLogin('tok', user));

describe('ComfyUI 工作流: my workflows', () => {
  it('explains what a workflow is when there is none, with 新建 and 导入 JSON; 新建 starts from the default graph', async () => {
    const fetch = fakeServer(comfyHandler(), diffusionHandler());
    const router = renderApp(PAGE.comfyui);
    expect(await screen.findByText('还没有工作流')).toBeTruthy();
    expect(screen.getByText(/工作流是 ComfyUI 的节点图/)).toBeTruthy();
    expect(screen.getByText('导入 JSON')).toBeTruthy();
    expect(await screen.findByText(/还没有运行记录/)).toBeTruthy();

    fireEvent.click(button('新建工作流'));
    const dialog = (await screen.findByText('创建并编辑')).closest<HTMLElement>('.ant-modal')!;
    fireEvent.change(within(dialog).getByLabelText('工作流名称'), { target: { value: '  我的文生图 ' } });
    fireEvent.click(button('创建并编辑', dialog));
    await waitFor(() => expect(callsTo(fetch, WORKFLOWS, 'POST')).toHaveLength(1));
    expect(callsTo(fetch, WORKFLOWS, 'POST')[0]!.body).toEqual({ name: '我的文生图', graph: defaultComfyGraph() });
    // The new one opens in the editor.
    expect(await screen.findByTestId('workflow-editor')).toBeTruthy();
    expect(router.state.location.search).toBe('?workflow=f10f0000-0000-4000-8000-000000000002');
  });

  it('lists the workflows with their node count and last change, and 删除 says the pictures stay', async () => {
    const other = workflow({ id: 'f10f0000-0000-4000-8000-000000000003', name: '赛博夜景', nodes: 9, updatedAt: '2026-11-24T02:05:00.000Z' });
    const fetch = fakeServer(comfyHandler({ workflows: [workflow(), other] }), diffusionHandler());
    renderApp(PAGE.comfyui);
    const row = (await screen.findByText('水彩猫咪')).closest('tr')!;
    expect(within(row).getByText('7 个')).toBeTruthy();
    expect(within(row).getByText('2026-11-25 15:30')).toBeTruthy();
    expect(within(screen.getByText('赛博夜景').closest('tr')!).getByText('9 个')).toBeTruthy();
    expect(screen.getByText(/共 2 个 · 最多保存 100 个/)).toBeTruthy();

    fireEvent.click(button('删除', screen.getByText('赛博夜景').closest('tr')!));
    expect(await screen.findByText('删除后不可恢复；已生成的图片仍保留在画廊')).toBeTruthy();
    fireEvent.click(button('删除', document.querySelector<HTMLElement>('.ant-popconfirm')!));
    await waitFor(() => expect(callsTo(fetch, `${WORKFLOWS}/${other.id}`, 'DELETE')).toHaveLength(1));
    await waitFor(() => expect(screen.queryByText('赛博夜景')).toBeNull());
  });

  it('an exported UI-format file is refused with how to export the API format; an API-format file is imported under its file name', async () => {
    const fetch = fakeServer(comfyHandler(), diffusionHandler());
    renderApp(PAGE.comfyui);
    await screen.findByText('还没有工作流');
    pickFile('canvas.json', JSON.stringify({ last_node_id: 9, nodes: [{ id: 3, type: 'KSampler' }], links: [[1, 4, 0, 3, 0, 'MODEL']], version: 0.4 }));
    const problem = await screen.findByTestId('import-problem');
    expect(problem.textContent).toContain('无法导入「canvas.json」');
    expect(problem.textContent).toContain('Save (API Format)');
    expect(problem.textContent).toContain('Enable Dev mode Options');
    expect(callsTo(fetch, WORKFLOWS, 'POST')).toHaveLength(0);

    pickFile('broken.json', '{ "3": ');
    await waitFor(() => expect(screen.getByTestId('import-problem').textContent).toContain('不是有效的 JSON'));

    const graph = defaultComfyGraph();
    pickFile('夜景.json', JSON.stringify(graph));
    const dialog = (await screen.findByText('导入并编辑')).closest<HTMLElement>('.ant-modal')!;
    expect(within(dialog).getByText('「夜景.json」共 7 个节点')).toBeTruthy();
    expect((within(dialog).getByLabelText('工作流名称') as HTMLInputElement).value).toBe('夜景');
    fireEvent.click(button('导入并编辑', dialog));
    await waitFor(() => expect(callsTo(fetch, WORKFLOWS, 'POST')).toHaveLength(1));
    expect(callsTo(fetch, WORKFLOWS, 'POST')[0]!.body).toEqual({ name: '夜景', graph });
  });
});

describe('ComfyUI 工作流: the editor', () => {
  it('shows the nodes in run order with their inputs; an edit is checked at once and priced again', async () => {
    const fetch = fakeServer(comfyHandler({ workflows: [workflow()] }), diffusionHandler());
    renderApp(EDITOR);
    await waitFor(() => expect(screen.getAllByTestId('node-card')).toHaveLength(7));
    expect(screen.getAllByTestId('node-card').map((c) => c.getAttribute('data-node'))).toEqual(['4', '6', '7', '5', '3', '8', '9']);
    const sampler = screen.getAllByTestId('node-card')[4]!;
    expect(within(sampler).getByText('采样器')).toBeTruthy();
    expect(within(sampler).getByText('KSampler')).toBeTruthy();
    expect(
      within(sampler)
        .getAllByTestId('node-link')
        .map((l) => l.textContent),
    ).toEqual(['← 节点 4 的输出 0', '← 节点 6 的输出 0', '← 节点 7 的输出 0', '← 节点 5 的输出 0']);
    expect(within(sampler).getByText('MODEL')).toBeTruthy();
    await waitFor(() => expect(quoteGraphs(fetch)).toHaveLength(1));
    const quote = comfyQuoteFor(defaultComfyGraph()) as ComfyQuote;
    expect(screen.getByTestId('quote-images').textContent).toBe('1 张');
    expect(screen.getByTestId('quote-total').textContent).toBe(`¥${(Number(quote.total) / 10000).toFixed(2)}`);

    // Out of range: the check says so on the node and no price is asked for.
    fireEvent.change(screen.getByLabelText('节点 5 的 batch_size'), { target: { value: '' } });
    expect(await within(screen.getAllByTestId('node-card')[3]!).findByText('节点 5（Empty Latent Image）的 batch_size 未填写')).toBeTruthy();
    expect(screen.getByTestId('quote-panel').textContent).toBe('修改下方标出的问题后显示费用');
    expect(screen.getByLabelText('节点 5 的 batch_size').closest('.ant-input-number')!.className).toContain('status-error');
    expect(button('运行').disabled).toBe(true);

    fireEvent.change(screen.getByLabelText('节点 5 的 batch_size'), { target: { value: '2' } });
    fireEvent.change(screen.getByLabelText('节点 3 的 steps'), { target: { value: '30' } });
    await waitFor(() => expect(quoteGraphs(fetch)).toHaveLength(2));
    expect(quoteGraphs(fetch)[1]!['3']!.inputs.steps).toBe(30);
    expect(quoteGraphs(fetch)[1]!['5']!.inputs.batch_size).toBe(2);
    await waitFor(() => expect(screen.getByTestId('quote-images').textContent).toBe('2 张'));
    expect(screen.getByText('未保存')).toBeTruthy();
  });

  it('the JSON tab applies a valid graph and says why another does not parse', async () => {
    const fetch = fakeServer(comfyHandler({ workflows: [workflow()] }), diffusionHandler());
    renderApp(EDITOR);
    fireEvent.click(await screen.findByText('JSON'));
    const text = screen.getByLabelText('工作流 JSON') as HTMLTextAreaElement;
    expect(JSON.parse(text.value)).toEqual(defaultComfyGraph());
    fireEvent.change(text, { target: { value: JSON.stringify({ nodes: [], links: [] }) } });
    fireEvent.click(button('应用'));
    expect((await screen.findByTestId('json-problem')).textContent).toContain('Save (API Format)');

    const graph = defaultComfyGraph();
    graph['3']!.inputs.seed = 7;
    fireEvent.change(text, { target: { value: JSON.stringify(graph) } });
    fireEvent.click(button('应用'));
    await waitFor(() => expect(quoteGraphs(fetch).some((g) => g['3']!.inputs.seed === 7)).toBe(true));
    fireEvent.click(screen.getByText('节点（7）'));
    expect((screen.getByLabelText('节点 3 的 seed') as HTMLInputElement).value).toBe('7');
  });

  it('运行 saves the edit first, asks with the amount held, and a double click posts one run with a requestId', async () => {
    const fetch = fakeServer(comfyHandler({ workflows: [workflow()] }), diffusionHandler());
    renderApp(EDITOR);
    await screen.findAllByTestId('node-card');
    fireEvent.change(screen.getByLabelText('节点 5 的 batch_size'), { target: { value: '3' } });
    await waitFor(() => expect(screen.getByTestId('quote-images').textContent).toBe('3 张'));
    await waitFor(() => expect(button('运行').disabled).toBe(false));
    fireEvent.click(button('运行'));
    fireEvent.click(button('运行'));

    const hold = await screen.findByTestId('run-hold');
    expect(screen.getAllByTestId('run-hold')).toHaveLength(1);
    const graph = defaultComfyGraph();
    graph['5']!.inputs.batch_size = 3;
    const quote = comfyQuoteFor(graph) as ComfyQuote;
    const yuan = (units: string) => (Number(units) / 10000).toFixed(2);
    expect(hold.textContent).toBe(`将从现金预扣 ¥${yuan(quote.total)}（生成 3 张，每张 ¥${yuan(quote.perImage)}）`);
    // Saved before asking: the run is of the saved version.
    const puts = callsTo(fetch, `${WORKFLOWS}/${WORKFLOW_ID}`, 'PUT');
    expect(puts).toHaveLength(1);
    expect(puts[0]!.body).toEqual({ graph });
    expect(callsTo(fetch, RUNS, 'POST')).toHaveLength(0);

    const dialog = hold.closest<HTMLElement>('.ant-modal')!;
    fireEvent.click(button('确认运行', dialog));
    fireEvent.click(button('确认运行', dialog));
    expect(await screen.findByText(/已开始运行「水彩猫咪」/)).toBeTruthy();
    expect(callsTo(fetch, RUNS, 'POST')).toHaveLength(1);
    expect(callsTo(fetch, RUNS, 'POST')[0]!.body).toEqual({ workflowId: WORKFLOW_ID, requestId: expect.stringMatching(UUID) });
    expect(screen.queryByText('未保存')).toBeNull();
  });

  it('too little cash: 去充值 leads to the recharge page', async () => {
    fakeServer(
      (url, init) =>
        url.pathname === RUNS && init?.method === 'POST'
          ? json(400, { code: ERRORS.DIFFUSION_INSUFFICIENT_CASH.code, message: ERRORS.DIFFUSION_INSUFFICIENT_CASH.message, detail: '还差 ¥0.01' })
          : undefined,
      comfyHandler({ workflows: [workflow()] }),
      diffusionHandler(),
    );
    const router = renderApp(EDITOR);
    await screen.findAllByTestId('node-card');
    await waitFor(() => expect(button('运行').disabled).toBe(false));
    fireEvent.click(button('运行'));
    fireEvent.click(button('确认运行', (await screen.findByTestId('run-hold')).closest<HTMLElement>('.ant-modal')!));
    expect(await screen.findByText(`${ERRORS.DIFFUSION_INSUFFICIENT_CASH.message}：还差 ¥0.01`)).toBeTruthy();
    fireEvent.click(button('去充值'));
    await waitFor(() => expect(router.state.location.pathname).toBe(PAGE.recharge));
  });
});

describe('ComfyUI 工作流: runs', () => {
  it('follows a running run node by node, polling; a failed node shows its error and the run why it failed', async () => {
    const state = { workflows: [workflow()], runs: [runTask()] };
    const fetch = fakeServer(comfyHandler(state), diffusionHandler());
    renderApp(PAGE.comfyui);
    const run = await screen.findByTestId('comfy-run');
    expect(within(run).getByText('生成中')).toBeTruthy();
    expect(within(run).getByText('取消')).toBeTruthy();
    expect(within(run).getByText('水彩猫咪')).toBeTruthy();
    const states = () => screen.getAllByTestId('run-node').map((n) => n.getAttribute('data-state'));
    expect(states()).toEqual(['done', 'done', 'done', 'done', 'running', 'waiting', 'waiting']);
    expect(within(run).getByText('12/20 步')).toBeTruthy();
    expect(within(run).getByText(/预扣 ¥0\.01/)).toBeTruthy();
    const runCalls = callsTo(fetch, TASKS).length;
    expect(new URL(callsTo(fetch, TASKS)[0]!.url).searchParams.get('kind')).toBe('workflow');

    state.runs = [
      runTask(
        { status: 'failed', refunded: '100', error: '节点 3（KSampler）运行出错：CUDA out of memory', finishedAt: '2026-11-25T08:01:00.000Z' },
        { executing: null, progress: null, error: { node: '3', nodeType: 'KSampler', message: 'CUDA out of memory' } },
      ),
    ];
    await waitFor(() => expect(screen.getByTestId('comfy-run').textContent).toContain('失败'));
    expect(callsTo(fetch, TASKS).length).toBeGreaterThan(runCalls);
    expect(states()).toEqual(['done', 'done', 'done', 'done', 'error', 'skipped', 'skipped']);
    expect(screen.getByTestId('run-node-error').textContent).toBe('KSampler：CUDA out of memory');
    expect(screen.getByTestId('run-error').textContent).toBe('失败原因：节点 3（KSampler）运行出错：CUDA out of memory（未生成部分已退款）');
    expect(screen.getByText(/已退回 ¥0\.01/)).toBeTruthy();
    expect(within(screen.getByTestId('comfy-run')).queryByText('取消')).toBeNull();
    expect(screen.getByText('在画廊中查看全部').closest('a')!.getAttribute('href')).toBe(PAGE.sdDiffusion);
  });

  it('取消 asks first, says what is returned, and cancels the run', async () => {
    const state = { runs: [runTask()] };
    const fetch = fakeServer(
      (url, init) => {
        if (url.pathname !== `${TASKS}/${RUN_ID}/cancel` || init?.method !== 'POST') return undefined;
        state.runs = [runTask({ status: 'cancelled', refunded: '100' }, { executing: null, progress: null })];
        return json(200, state.runs[0]);
      },
      comfyHandler(state),
      diffusionHandler(),
    );
    renderApp(PAGE.comfyui);
    fireEvent.click(within(await screen.findByTestId('comfy-run')).getByText('取消'));
    const dialog = (await screen.findByText('确认取消运行「水彩猫咪」？', { selector: '.ant-modal-confirm-title' })).closest<HTMLElement>('.ant-modal')!;
    expect(dialog.textContent).toContain('预扣的 ¥0.01 将全部退回现金余额');
    fireEvent.click(button('确认取消', dialog));
    await waitFor(() => expect(callsTo(fetch, `${TASKS}/${RUN_ID}/cancel`, 'POST')).toHaveLength(1));
    await waitFor(() => expect(within(screen.getByTestId('comfy-run')).getByText('已取消')).toBeTruthy());
    expect(screen.getAllByTestId('run-node').map((n) => n.getAttribute('data-state'))).toEqual([
      'done',
      'done',
      'done',
      'done',
      'skipped',
      'skipped',
      'skipped',
    ]);
  });

  it('a finished run folds its nodes and shows its pictures, each opening and downloading', async () => {
    const image = genImage({ workflowName: '水彩猫咪', loras: [] });
    const done = runTask(
      { status: 'done', done: 1, charged: '100', images: [image], finishedAt: '2026-11-25T08:01:00.000Z' },
      { executing: null, progress: null, executed: ['4', '6', '7', '5', '3', '8', '9'] },
    );
    fakeServer(comfyHandler({ runs: [done] }), diffusionHandler());
    renderApp(PAGE.comfyui);
    const run = await screen.findByTestId('comfy-run');
    expect(within(run).getByText('节点 7/7 已完成')).toBeTruthy();
    expect(within(run).queryAllByTestId('run-node')).toHaveLength(0);
    fireEvent.click(within(run).getByText('查看节点'));
    expect(within(run).getAllByTestId('run-node')).toHaveLength(7);
    const output = within(run).getByTestId('run-output');
    expect(output.querySelector('img')!.getAttribute('src')).toBe(`${IMAGES}/${image.id}/file?thumb=1`);
    expect(within(output).getByLabelText('下载第 1 张').closest('a')!.getAttribute('href')).toBe(`${IMAGES}/${image.id}/file?download=1`);
  });

  it('the gallery marks a workflow’s picture and offers no 复用参数 for it', async () => {
    const fromWorkflow = genImage({ id: 'b0b00000-0000-4000-8000-000000000009', workflowName: '水彩猫咪' });
    fakeServer(diffusionHandler({ images: [fromWorkflow, genImage()] }));
    renderApp(PAGE.sdDiffusion);
    const [first, second] = await screen.findAllByTestId('gallery-image');
    expect(within(first!).getByTestId('gallery-workflow').textContent).toBe('工作流：水彩猫咪');
    expect(within(first!).queryByText('复用参数')).toBeNull();
    expect(within(second!).queryByTestId('gallery-workflow')).toBeNull();
    expect(within(second!).getByText('复用参数')).toBeTruthy();
  });
});

describe('ComfyUI 工作流: my ComfyUI instances', () => {
  it('opens a running instance’s ComfyUI in the page; a redirect_login from its frame ends the session and goes to log in', async () => {
    const appUrl = `${window.location.origin}/app/c0ffee00-0000-4000-8000-000000000001/`;
    const running = instance({ id: 'c0ffee00-0000-4000-8000-000000000001', name: 'ComfyUI-1', applicationId: 'comfyui', applicationName: 'ComfyUI' });
    const stopped = instance({
      id: 'c0ffee00-0000-4000-8000-000000000002',
      name: 'ComfyUI-2',
      status: 'Stopped',
      applicationId: 'comfyui',
      applicationName: 'ComfyUI',
    });
    const fetch = fakeServer(comfyHandler({ instances: [{ ...running, access: { ...running.access!, appUrl } }, stopped] }), diffusionHandler());
    const router = renderApp(PAGE.comfyui);
    const row = await screen.findByLabelText('ComfyUI 实例 ComfyUI-1');
    expect(callsTo(fetch, '/upgpu/api/v2.1/instances', 'GET')[0]!.url.searchParams.get('filterBy')).toBe('application,comfyui');
    expect(within(row).getByText('新窗口打开 ComfyUI').closest('a')!.getAttribute('href')).toBe(appUrl);
    expect(within(screen.getByLabelText('ComfyUI 实例 ComfyUI-2')).getByText(/开机后可打开/)).toBeTruthy();

    fireEvent.click(button('在页面中打开', row));
    const frame = (await screen.findByTitle('ComfyUI 编辑器：ComfyUI-1')) as HTMLIFrameElement;
    expect(frame.getAttribute('src')).toBe(appUrl);
    // A message from elsewhere is not the frame's.
    window.dispatchEvent(new MessageEvent('message', { data: 'redirect_login', source: window }));
    expect(session.getToken()).toBe('tok');
    window.dispatchEvent(new MessageEvent('message', { data: 'redirect_login', source: frame.contentWindow }));
    await waitFor(() => expect(router.state.location.pathname).toBe(PAGE.login));
    expect(session.getToken()).toBeNull();
  });

  it('frames only pages of the console’s own site', () => {
    expect(framable('https://abc.m.example.com/', 'https://console.example.com/comfyui')).toBe(true);
    expect(framable('https://abc.m.example.com.cn/', 'https://console.other.com.cn/comfyui')).toBe(false);
    expect(framable('http://abc.localhost:8081/', 'http://localhost:8080/comfyui')).toBe(false);
    expect(framable('http://abc.example.com/', 'https://console.example.com/')).toBe(false);
    expect(siteOf('a.b.example.com.cn')).toBe('example.com.cn');
    expect(siteOf('10.0.0.1')).toBeNull();
  });
});
