/**
 * The ComfyUI area: workflows saved, renamed, refused and deleted; a run priced before it starts,
 * executed by the embedded ComfyUI over its own API with per-node progress, its pictures charged
 * one by one into the gallery; a cancel returning what was not made.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  API,
  COMFY_MAX_WORKFLOWS,
  analyzeComfyGraph,
  comfyImageUnits,
  defaultComfyGraph,
  yuanToUnits,
  type ComfyGraph,
  type ComfyQuote,
  type ComfyWorkflow,
  type DiffusionTask,
  type PageOf,
  type diffusionImageSchema,
} from '@console/contract';
import { childAccount, countRows, del, fundedUser, get, json, post, put, registerUser, startTestServer, type TestServer } from '../../../test/harness.js';
import { checkLedger } from '../ledger/index.js';

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer({ env: { PAINTER_CAPACITY: '2' } });
});
afterAll(async () => s.close());

const fill = (p: string, id: string) => p.replace(':id', id);
const cash = async (userId: string) => (await s.ctx.ledger.balances(userId)).cash;
/** A small, quick graph: 256², 10 steps, two images in one batch. */
function smallGraph(): ComfyGraph {
  const g = defaultComfyGraph();
  g['5']!.inputs = { width: 256, height: 256, batch_size: 2 };
  g['3']!.inputs.steps = 10;
  return g;
}
const save = (token: string, name: string, graph: unknown = smallGraph()) => post(s.app, API.comfyWorkflows, { name, graph }, token);
const runOf = (token: string, workflowId: string, requestId = randomUUID()) => post(s.app, API.comfyRuns, { workflowId, requestId }, token);
const task = async (token: string, id: string) => json<DiffusionTask>(await get(s.app, fill(API.sdDiffusionTask, id), token));

/** Ticks as the scheduler would, moving the clock, until the task ends (the embedded ComfyUI runs on its own timer). */
async function runToEnd(token: string, id: string): Promise<DiffusionTask> {
  for (let i = 0; i < 100; i++) {
    s.clock.advance(1000);
    await new Promise((r) => setTimeout(r, 60));
    await s.ctx.diffusion.tick();
    const t = await task(token, id);
    if (!['queued', 'running'].includes(t.status)) return t;
  }
  throw new Error('the run did not end');
}

describe('workflows', () => {
  it('saves, lists, renames, replaces and deletes; names are the account’s own', async () => {
    const u = await registerUser(s);
    const created = json<ComfyWorkflow>(await save(u.token, '人像出图'));
    expect(created).toMatchObject({ name: '人像出图', nodes: 7 });
    expect(json(await save(u.token, '人像出图')).code).toBe(40950006);
    // Another account may use the same name, and cannot see or touch this one.
    const other = await registerUser(s);
    expect((await save(other.token, '人像出图')).statusCode).toBe(200);
    expect(json(await get(s.app, fill(API.comfyWorkflow, created.id), other.token)).code).toBe(40450009);
    expect(json(await del(s.app, fill(API.comfyWorkflow, created.id), other.token)).code).toBe(40450009);

    const renamed = json<ComfyWorkflow>(await put(s.app, fill(API.comfyWorkflow, created.id), { name: '人像 v2' }, u.token));
    expect(renamed.name).toBe('人像 v2');
    const graph = smallGraph();
    graph['6']!.inputs.text = 'a lighthouse at dusk';
    const replaced = json<ComfyWorkflow>(await put(s.app, fill(API.comfyWorkflow, created.id), { graph }, u.token));
    expect(replaced.graph['6']!.inputs.text).toBe('a lighthouse at dusk');
    expect((await put(s.app, fill(API.comfyWorkflow, created.id), {}, u.token)).body).toContain('请提供要修改的名称或工作流');

    const list = json<PageOf<typeof import('@console/contract').comfyWorkflowSchema>>(await get(s.app, `${API.comfyWorkflows}?page=1&pageSize=10`, u.token));
    expect(list.items.map((w) => w.name)).toEqual(['人像 v2']);
    expect((await del(s.app, fill(API.comfyWorkflow, created.id), u.token)).statusCode).toBe(200);
    expect(json(await get(s.app, fill(API.comfyWorkflow, created.id), u.token)).code).toBe(40450009);
  });

  it('refuses what is not an API-format graph, with the reason, and writes nothing', async () => {
    const u = await registerUser(s);
    const before = await countRows(s, 'comfy_workflows');
    // The editor's own format (nodes and links arrays) is not the API format.
    const ui = await save(u.token, 'ui', { nodes: [], links: [] });
    expect(ui.statusCode).toBe(400);
    expect((await save(u.token, 'empty', {})).body).toContain('工作流没有节点');
    expect((await save(u.token, '', smallGraph())).body).toContain('请输入工作流名称');
    expect(json(await save(u.token, 'link', { '1': { class_type: 'KSampler', inputs: { model: ['2', 'x'] } } })).code).toBe(40000001);
    const huge = Object.fromEntries(Array.from({ length: 65 }, (_, i) => [String(i), { class_type: 'SaveImage', inputs: {} }]));
    expect((await save(u.token, 'huge', huge)).body).toContain('最多 64 个节点');
    expect(await countRows(s, 'comfy_workflows')).toBe(before);
  });

  it(`keeps at most ${COMFY_MAX_WORKFLOWS} workflows an account`, async () => {
    const u = await registerUser(s);
    for (let i = 0; i < COMFY_MAX_WORKFLOWS; i++) expect((await save(u.token, `w${i}`)).statusCode).toBe(200);
    expect(json(await save(u.token, 'one more')).code).toBe(40950005);
  });

  it('is closed to a child without the GPU permission', async () => {
    const u = await registerUser(s);
    const child = await childAccount(s, u, 'painter', { usingLLM: true });
    expect((await save(child.token, 'x')).statusCode).toBe(403);
    expect((await get(s.app, API.comfyWorkflows, child.token)).statusCode).toBe(403);
  });
});

describe('quote and run', () => {
  it('quotes a run by the GPU time of its samplers, and says why one cannot run', async () => {
    const u = await registerUser(s);
    const quote = json<ComfyQuote>(await post(s.app, API.comfyQuote, { graph: smallGraph() }, u.token));
    const analysis = analyzeComfyGraph(smallGraph());
    if (!analysis.ok) throw new Error('the small graph should run');
    expect(quote.images).toBe(2);
    expect(quote.perImage).toBe(String(comfyImageUnits(analysis.plan, BigInt(quote.ratePerHour))));
    expect(quote.total).toBe(String(BigInt(quote.perImage) * 2n));

    const custom = { ...smallGraph(), '20': { class_type: 'UpscaleModelLoader', inputs: { model_name: 'x4.pth' } } };
    const refused = json(await post(s.app, API.comfyQuote, { graph: custom }, u.token));
    expect(refused.code).toBe(40050009);
    expect(JSON.stringify(refused)).toContain('UpscaleModelLoader');
    const loop = smallGraph();
    loop['5'] = { class_type: 'KSampler', inputs: { ...loop['3']!.inputs, latent_image: ['3', 0] } };
    expect((await post(s.app, API.comfyQuote, { graph: loop }, u.token)).body).toContain('环');
    const wrongType = smallGraph();
    wrongType['8']!.inputs.vae = ['4', 1];
    expect((await post(s.app, API.comfyQuote, { graph: wrongType }, u.token)).body).toContain('应连接 VAE');
  });

  it('runs a saved workflow on the embedded ComfyUI: nodes in order, each picture charged once, into the gallery', async () => {
    const u = await fundedUser(s, '20');
    const w = json<ComfyWorkflow>(await save(u.token, '灯塔'));
    const requestId = randomUUID();
    const started = json<DiffusionTask>(await runOf(u.token, w.id, requestId));
    expect(started).toMatchObject({ kind: 'workflow', status: 'queued', batchCount: 2, workflow: { id: w.id, name: '灯塔' } });
    expect(started.workflow!.nodes.map((n) => n.id)).toEqual(['4', '6', '7', '5', '3', '8', '9']);
    // A double click runs once.
    expect(json<DiffusionTask>(await runOf(u.token, w.id, requestId)).id).toBe(started.id);
    expect(await cash(u.user.id)).toBe(yuanToUnits('20') - BigInt(started.held));
    // Editing the workflow now does not change the run.
    await put(
      s.app,
      fill(API.comfyWorkflow, w.id),
      { graph: { ...smallGraph(), '3': { ...smallGraph()['3']!, inputs: { ...smallGraph()['3']!.inputs, steps: 50 } } } },
      u.token,
    );

    const done = await runToEnd(u.token, started.id);
    expect(done).toMatchObject({ status: 'done', done: 2, charged: started.held, refunded: '0' });
    expect(done.workflow!.state).toMatchObject({ executing: null, error: null });
    expect(done.workflow!.state.executed).toEqual(['4', '6', '7', '5', '3', '8', '9']);
    expect(done.images.map((i) => [i.index, i.seed, i.workflowName])).toEqual([
      [0, 42, '灯塔'],
      [1, 43, '灯塔'],
    ]);
    const gallery = json<PageOf<typeof diffusionImageSchema>>(await get(s.app, `${API.sdDiffusionImages}?page=1&pageSize=10`, u.token));
    expect(gallery.items.map((i) => i.workflowName)).toEqual(['灯塔', '灯塔']);
    const png = await get(s.app, `${fill(API.sdDiffusionImageFile, done.images[0]!.id)}`, u.token);
    expect(png.headers['content-type']).toBe('image/png');
    expect(png.rawPayload.subarray(1, 4).toString()).toBe('PNG');

    const runs = json<PageOf<typeof import('@console/contract').diffusionTaskSchema>>(
      await get(s.app, `${API.sdDiffusionTasks}?page=1&pageSize=10&kind=workflow`, u.token),
    );
    expect(runs.items.map((t) => t.id)).toEqual([started.id]);
    const txt = json<PageOf<typeof import('@console/contract').diffusionTaskSchema>>(
      await get(s.app, `${API.sdDiffusionTasks}?page=1&pageSize=10&kind=txt2img`, u.token),
    );
    expect(txt.total).toBe(0);
    expect(await cash(u.user.id)).toBe(yuanToUnits('20') - BigInt(started.held));
    expect((await checkLedger(s.ctx.db)).problems).toEqual([]);
  });

  it('a cancel before the pictures are saved returns the whole hold', async () => {
    const u = await fundedUser(s, '20');
    const w = json<ComfyWorkflow>(await save(u.token, 'slow'));
    const started = json<DiffusionTask>(await runOf(u.token, w.id));
    await s.ctx.diffusion.tick();
    s.clock.advance(300);
    await new Promise((r) => setTimeout(r, 60));
    await s.ctx.diffusion.tick();
    const running = await task(u.token, started.id);
    expect(running.status).toBe('running');
    const cancelled = json<DiffusionTask>(await post(s.app, fill(API.sdDiffusionTaskCancel, started.id), {}, u.token));
    expect(cancelled).toMatchObject({ status: 'cancelled', done: 0, charged: '0', refunded: started.held });
    expect(await cash(u.user.id)).toBe(yuanToUnits('20'));
    expect((await checkLedger(s.ctx.db)).problems).toEqual([]);
  });

  it('refuses to run a workflow the backend cannot run, or someone else’s, holding nothing', async () => {
    const u = await fundedUser(s, '20');
    const custom = json<ComfyWorkflow>(await save(u.token, 'custom', { ...smallGraph(), '20': { class_type: 'ControlNetLoader', inputs: {} } }));
    const before = await countRows(s, 'sd_gen_tasks');
    expect(json(await runOf(u.token, custom.id)).code).toBe(40050009);
    const other = await fundedUser(s, '20');
    expect(json(await runOf(other.token, custom.id)).code).toBe(40450009);
    const poor = await registerUser(s);
    const mine = json<ComfyWorkflow>(await save(poor.token, 'mine'));
    expect(json(await runOf(poor.token, mine.id)).code).toBe(40011011);
    expect(await countRows(s, 'sd_gen_tasks')).toBe(before);
    expect(await cash(u.user.id)).toBe(yuanToUnits('20'));
  });
});
