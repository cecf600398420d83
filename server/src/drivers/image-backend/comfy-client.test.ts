import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import WebSocket from 'ws';
import { defaultComfyGraph, txt2imgGraph, type ComfyGraph } from '@console/contract';
import { ManualClock } from '../../clock.js';
import { ComfyPainter } from './comfy-client.js';
import { EmbeddedComfy } from './embedded-comfy.js';
import { EmbeddedPainter } from './embedded-painter.js';
import type { PainterEvent, PaintingTask } from './types.js';

const params = {
  prompt: 'a red fox in the snow',
  negativePrompt: 'blurry',
  baseModel: 'sd15' as const,
  width: 256,
  height: 256,
  steps: 10,
  cfg: 7,
  sampler: 'DPM++ 2M Karras' as const,
  seed: 1234,
  batchCount: 2,
};
const task = (over: Partial<PaintingTask> = {}): PaintingTask => ({ taskId: crypto.randomUUID(), params, loras: [], fromImage: 0, ...over });

let comfy: EmbeddedComfy;
let clock: ManualClock;
afterEach(() => comfy?.close());

function setup() {
  clock = new ManualClock();
  comfy = new EmbeddedComfy(clock, 1, 10);
  return new ComfyPainter(comfy);
}

/** Polls (moving the clock a second each time) until the task ends; every event in order. */
async function runToEnd(painter: ComfyPainter, id: string, maxPolls = 200): Promise<PainterEvent[]> {
  const all: PainterEvent[] = [];
  for (let i = 0; i < maxPolls; i++) {
    clock.advance(1000);
    await new Promise((r) => setTimeout(r, 25));
    const events = await painter.poll(id);
    if (events === null) throw new Error('run lost');
    all.push(...events);
    if (events.some((e) => e.type === 'done' || e.type === 'failed')) return all;
  }
  throw new Error('run did not end');
}

describe('ComfyUI client against the embedded ComfyUI', () => {
  it('runs a txt2img task as the standard graph: per-node messages, and the same pictures as the embedded painter', async () => {
    const painter = setup();
    const t = task();
    await painter.start(t);
    const events = await runToEnd(painter, t.taskId);
    const messages = events.flatMap((e) => (e.type === 'node' ? [e.message] : []));
    expect(messages[0]!.type).toBe('execution_start');
    const executing = messages.flatMap((m) => (m.type === 'executing' && m.data.node ? [m.data.node] : []));
    // Loader, prompts and latent before the sampler, then decode and save.
    expect(executing.indexOf('3')).toBeGreaterThan(executing.indexOf('4'));
    expect(executing.slice(-2)).toEqual(['8', '9']);
    const progress = messages.flatMap((m) => (m.type === 'progress' ? [m.data.value] : []));
    expect(progress.at(-1)).toBe(10);
    expect(progress).toEqual([...progress].sort((a, b) => a - b));
    expect(messages.some((m) => m.type === 'executed' && m.data.node === '9')).toBe(true);
    expect(events.at(-1)).toEqual({ type: 'done' });

    const images = events.flatMap((e) => (e.type === 'image' ? [e] : []));
    expect(images.map((i) => [i.index, i.seed])).toEqual([
      [0, 1234],
      [1, 1235],
    ]);
    // The embedded painter paints the same task to the same bytes.
    const direct = new EmbeddedPainter(clock, 1000);
    await direct.start(t);
    clock.advance(60_000);
    const first = (await direct.poll(t.taskId))!.find((e) => e.type === 'image')!;
    expect(first.type === 'image' && first.png.equals(images[0]!.png)).toBe(true);
  });

  it('a run restarted after its first image gives only the rest', async () => {
    const painter = setup();
    const t = task({ fromImage: 1 });
    await painter.start(t);
    const images = (await runToEnd(painter, t.taskId)).filter((e) => e.type === 'image');
    expect(images.map((i) => i.type === 'image' && i.index)).toEqual([1]);
  });

  it('a workflow ComfyUI refuses fails at the next poll with the node named', async () => {
    const painter = setup();
    const graph: ComfyGraph = { ...defaultComfyGraph(), '3': { class_type: 'KSampler', inputs: { ...defaultComfyGraph()['3']!.inputs, steps: 0 } } };
    const t = task({ workflow: graph });
    await painter.start(t);
    const [event] = (await painter.poll(t.taskId))!;
    expect(event).toMatchObject({ type: 'failed' });
    expect(event?.type === 'failed' && event.reason).toContain('节点 3');
  });

  it('answers POST /prompt with ComfyUI node_errors for a bad input, and invalid_prompt for an unknown node', async () => {
    setup();
    const base = await comfy.url();
    const bad = txt2imgGraph({ ...params, seed: 1 });
    bad['5']!.inputs.width = 100;
    const res = await fetch(`${base}/prompt`, { method: 'POST', body: JSON.stringify({ prompt: bad }) });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: { type: string }; node_errors: Record<string, { class_type: string }> };
    expect(body.error.type).toBe('prompt_outputs_failed_validation');
    expect(body.node_errors['5']!.class_type).toBe('EmptyLatentImage');
    const unknown = await fetch(`${base}/prompt`, {
      method: 'POST',
      body: JSON.stringify({ prompt: { ...bad, '99': { class_type: 'UpscaleModelLoader', inputs: {} } } }),
    });
    expect(((await unknown.json()) as { error: { type: string; message: string } }).error.message).toContain('UpscaleModelLoader does not exist');
  });

  it('cancelling interrupts the running prompt: its history says so, and the next prompt runs', async () => {
    const painter = setup();
    const a = task();
    const b = task({ params: { ...params, batchCount: 1 } });
    await painter.start(a);
    await painter.start(b);
    clock.advance(500);
    await new Promise((r) => setTimeout(r, 50));
    const base = await comfy.url();
    const queue = (await (await fetch(`${base}/queue`)).json()) as { queue_running: unknown[][]; queue_pending: unknown[][] };
    expect(queue.queue_running).toHaveLength(1);
    expect(queue.queue_pending).toHaveLength(1);
    const promptA = String(queue.queue_running[0]![1]);
    await painter.cancel(a.taskId);
    expect(await painter.poll(a.taskId)).toBeNull();
    const events = await runToEnd(painter, b.taskId);
    expect(events.at(-1)).toEqual({ type: 'done' });
    const history = (await (await fetch(`${base}/history/${promptA}`)).json()) as Record<string, { status: { status_str: string; messages: [string][] } }>;
    expect(history[promptA]!.status.status_str).toBe('error');
    expect(history[promptA]!.status.messages.at(-1)![0]).toBe('execution_interrupted');
  });

  it('a prompt the backend no longer knows (it restarted) is lost: the poll answers null', async () => {
    const painter = setup();
    const t = task();
    await painter.start(t);
    await comfy.close();
    comfy = new EmbeddedComfy(clock, 1, 10);
    // The same address is gone; the painter asks the new backend, which never heard of the prompt.
    const fresh = new ComfyPainter(comfy);
    (fresh as unknown as { runs: Map<string, unknown> }).runs = (painter as unknown as { runs: Map<string, unknown> }).runs;
    expect(await fresh.poll(t.taskId)).toBeNull();
  });

  it('a run that ends between the look at its history and the look at the queue is not lost', async () => {
    clock = new ManualClock();
    comfy = new EmbeddedComfy(clock, 1, 10);
    // The painter's own endpoint, so closing the painter drops only its socket (every later poll then asks the history).
    const painter = new ComfyPainter({ url: () => comfy.url() });
    const t = task({ fromImage: 1 });
    await painter.start(t);
    await painter.close();
    await painter.poll(t.taskId); // what the socket brought before it closed
    // ComfyUI answers the history while the prompt runs, then finishes it before the queue is asked.
    const realFetch = globalThis.fetch;
    let raced = false;
    vi.spyOn(globalThis, 'fetch').mockImplementation(async (input, init) => {
      const res = await realFetch(input, init);
      if (raced || !String(input).includes('/history/')) return res;
      raced = true;
      const promptId = decodeURIComponent(String(input).split('/history/')[1]!);
      // The clock moved on each look: a step the run scheduled only after an earlier advance (a loaded
      // machine started it late) still comes due.
      while (!(promptId in ((await (await realFetch(String(input))).json()) as object))) {
        clock.advance(600_000);
        await new Promise((r) => setTimeout(r, 10));
      }
      return res;
    });
    const events = await painter.poll(t.taskId);
    expect(raced).toBe(true);
    expect(events?.map((e) => (e.type === 'image' ? `image ${e.index}` : e.type)).filter((e) => e !== 'node')).toEqual(['image 1', 'done']);
  });

  it('sends the status to every client and the run messages only to the one that queued it', async () => {
    const painter = setup();
    const base = await comfy.url();
    const other = new WebSocket(`${base.replace('http', 'ws')}/ws?clientId=someone-else`);
    const seen: string[] = [];
    other.on('message', (d) => seen.push((JSON.parse(String(d)) as { type: string }).type));
    await new Promise((r) => other.once('open', r));
    const t = task({ params: { ...params, batchCount: 1 } });
    await painter.start(t);
    await runToEnd(painter, t.taskId);
    other.close();
    expect(seen.length).toBeGreaterThan(1);
    expect(new Set(seen)).toEqual(new Set(['status']));
  });

  it('puts an own LoRA into the shared loras folder before queuing; without the folder it refuses to start', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'loras-'));
    clock = new ManualClock();
    comfy = new EmbeddedComfy(clock, 1, 10);
    const painter = new ComfyPainter(comfy, 1, dir);
    expect(painter.ownLoras).toBe(true);
    const own = {
      color: [0.5, 0.2, 0.9] as [number, number, number],
      weight: 0.8,
      file: 'console-job-000002.safetensors',
      read: async () => Buffer.from('lora bytes'),
    };
    const t = task({ loras: [own] });
    await painter.start(t);
    expect(readFileSync(path.join(dir, own.file), 'utf8')).toBe('lora bytes');
    // The embedded ComfyUI has only the public LoRAs: it says which input is wrong.
    const [failed] = (await painter.poll(t.taskId))!;
    expect(failed?.type === 'failed' && failed.reason).toContain('lora_name');
    rmSync(dir, { recursive: true, force: true });

    const without = new ComfyPainter(comfy);
    expect(without.ownLoras).toBe(false);
    await expect(without.start(task({ loras: [own] }))).rejects.toThrow('COMFYUI_LORA_DIR');
  });
});
