/**
 * The console's ComfyUI client, a painter (types.ts) over ComfyUI's API: the same code drives the
 * embedded ComfyUI (embedded-comfy.ts) and a real one on a GPU machine (COMFYUI_URL).
 *
 * A task is queued with `POST /prompt` (a workflow's graph as it is, a txt2img task as ComfyUI's
 * standard graph); the run's messages arrive on one WebSocket (`/ws?clientId=`), and each poll hands
 * them over in order: `executed` files fetched from `/view` become the task's images. Messages can
 * be missed (the socket dropped, the process restarted): `/history/<id>` then tells how the run
 * ended and what it saved, and a prompt found in neither the history nor the queue is lost (the
 * poll answers null and the console starts the task again).
 */
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import WebSocket from 'ws';
import { analyzeComfyGraph, comfyWsMessageSchema, txt2imgGraph, type ComfyPlan, type ComfyWsMessage } from '@console/contract';
import type { PainterDriver, PainterEvent, PaintingTask } from './types.js';

/** Where the ComfyUI is (the embedded one starts listening when first asked). */
export interface ComfyEndpoint {
  url(): Promise<string>;
  close?(): Promise<void>;
}

interface Run {
  promptId: string | null;
  plan: ComfyPlan | null;
  fromImage: number;
  delivered: Set<number>;
  /** The run could not be queued: its reason, given at the next poll. */
  refused: string | null;
}

/** Messages kept for a prompt not (yet) known to be ours: its answer to POST /prompt may come after them. */
const UNCLAIMED_KEPT = 500;

export class ComfyPainter implements PainterDriver {
  readonly name = 'comfyui';
  private readonly clientId = randomUUID().replace(/-/g, '');
  private ws: WebSocket | null = null;
  private opening: Promise<void> | null = null;
  private runs = new Map<string, Run>();
  private inbox = new Map<string, ComfyWsMessage[]>();

  /** The account's LoRAs go into `loraDir` (ComfyUI's models/loras, shared with the console) before a run. */
  readonly ownLoras: boolean;

  constructor(
    private endpoint: ComfyEndpoint,
    readonly speedup = 1,
    private loraDir: string | null = null,
  ) {
    this.ownLoras = loraDir !== null;
  }

  async start(task: PaintingTask): Promise<void> {
    const graph =
      task.workflow ??
      txt2imgGraph(
        task.params,
        task.loras.map((l) => ({ file: l.file ?? '', weight: l.weight })),
      );
    const analysis = analyzeComfyGraph(graph, { ownLoras: task.loras.flatMap((l) => (l.read && l.file ? [l.file] : [])) });
    const run: Run = { promptId: null, plan: analysis.ok ? analysis.plan : null, fromImage: task.fromImage, delivered: new Set(), refused: null };
    if (!analysis.ok) {
      run.refused = `工作流无法运行：${analysis.errors.map((e) => e.message).join('；')}`;
      this.runs.set(task.taskId, run);
      return;
    }
    await this.placeLoras(task);
    await this.connect();
    const res = await this.request('/prompt', {
      method: 'POST',
      body: JSON.stringify({ prompt: graph, client_id: this.clientId, extra_data: { console_task: task.taskId } }),
    });
    const body = (await res.json().catch(() => ({}))) as {
      prompt_id?: string;
      error?: { message?: string };
      node_errors?: Record<string, { errors?: { message?: string }[] }>;
    };
    if (res.status === 400) {
      const details = Object.entries(body.node_errors ?? {}).flatMap(([node, e]) => (e.errors ?? []).map((x) => `节点 ${node}：${x.message ?? ''}`));
      run.refused = `ComfyUI 拒绝了工作流：${[body.error?.message ?? '', ...details].filter(Boolean).join('；')}`;
    } else if (!res.ok || !body.prompt_id) {
      throw new Error(`ComfyUI 未能接收任务（HTTP ${res.status}）`);
    } else {
      run.promptId = body.prompt_id;
    }
    this.runs.set(task.taskId, run);
  }

  async cancel(taskId: string): Promise<void> {
    const run = this.runs.get(taskId);
    this.runs.delete(taskId);
    if (!run?.promptId) return;
    this.inbox.delete(run.promptId);
    await this.request('/queue', { method: 'POST', body: JSON.stringify({ delete: [run.promptId] }) }).catch(() => {});
    const queue = await this.queue().catch(() => null);
    // /interrupt stops whatever runs now: only when that is this task's prompt.
    if (queue?.running.includes(run.promptId))
      await this.request('/interrupt', { method: 'POST', body: JSON.stringify({ prompt_id: run.promptId }) }).catch(() => {});
  }

  async poll(taskId: string): Promise<PainterEvent[] | null> {
    const run = this.runs.get(taskId);
    if (!run) return null;
    if (run.refused) {
      this.runs.delete(taskId);
      return [{ type: 'failed', reason: run.refused }];
    }
    const promptId = run.promptId!;
    // Nothing arrived: frames ComfyUI already sent may still be on the way (a loaded host). A pong
    // follows every frame sent before it on the same socket, so after it the inbox is complete up
    // to now, and the history below is consulted only for what the socket really missed.
    if (!this.inbox.get(promptId)?.length) await this.flushSocket();
    const messages = this.inbox.get(promptId) ?? [];
    this.inbox.set(promptId, []);
    const events: PainterEvent[] = [];
    let ended: ComfyWsMessage | null = null;
    for (const m of messages) {
      events.push({ type: 'node', message: m });
      if (m.type === 'progress') events.push({ type: 'progress', image: this.nextImage(run), step: m.data.value });
      else if (m.type === 'executed') await this.collect(run, m.data.node, m.data.output?.images ?? [], events);
      else if (m.type === 'execution_success' || m.type === 'execution_error' || m.type === 'execution_interrupted') ended = m;
    }
    // Missed messages: the history knows how it ended; neither history nor queue: the prompt is lost.
    if (!ended && (!messages.length || this.ws?.readyState !== WebSocket.OPEN)) {
      let history = await this.historyOf(promptId);
      if (!history && !messages.length) {
        if (await this.queued(promptId)) return events;
        // It may have ended between the two looks (ComfyUI writes the history before it leaves the
        // queue): only a prompt in neither after the queue said so is lost.
        history = await this.historyOf(promptId);
        if (!history) {
          this.forget(taskId, promptId);
          return null;
        }
      }
      if (history) {
        for (const [node, out] of Object.entries(history.outputs)) await this.collect(run, node, out.images ?? [], events);
        const last = history.status.messages.findLast(([type]) => ['execution_success', 'execution_error', 'execution_interrupted'].includes(type));
        const parsed = last && comfyWsMessageSchema.safeParse({ type: last[0], data: last[1] });
        ended = parsed?.success ? parsed.data : history.status.completed ? { type: 'execution_success', data: { prompt_id: promptId } } : null;
        if (!ended) ended = { type: 'execution_error', data: { prompt_id: promptId, node_id: '', node_type: '', exception_message: '运行未完成' } };
      }
    }
    if (ended) {
      this.forget(taskId, promptId);
      if (ended.type === 'execution_error')
        events.push({ type: 'failed', reason: `节点 ${ended.data.node_id}（${ended.data.node_type}）出错：${ended.data.exception_message}` });
      else if (ended.type === 'execution_interrupted') events.push({ type: 'failed', reason: '运行被中断' });
      else if (run.delivered.size < run.plan!.images.length - run.fromImage) events.push({ type: 'failed', reason: 'ComfyUI 运行结束，但没有返回全部图片' });
      else events.push({ type: 'done' });
    }
    return events;
  }

  /** The account's LoRA files into ComfyUI's loras folder (once: the name carries the job and the epoch). */
  private async placeLoras(task: PaintingTask) {
    for (const l of task.loras) {
      if (!l.read || !l.file) continue;
      if (!this.loraDir) throw new Error('ComfyUI 未配置 COMFYUI_LORA_DIR，不能使用自己训练的 LoRA');
      const target = path.join(this.loraDir, path.basename(l.file));
      if (existsSync(target)) continue;
      await writeFile(`${target}.part`, await l.read());
      await rename(`${target}.part`, target);
    }
  }

  /** The files a SaveImage node saved, as the task's images (those an earlier run made are skipped). */
  private async collect(run: Run, node: string, files: { filename: string; subfolder: string; type: string }[], events: PainterEvent[]) {
    const plan = run.plan!;
    const slots = plan.images.map((img, index) => ({ img, index })).filter((s) => s.img.node === node);
    for (const [k, file] of files.entries()) {
      const slot = slots[k];
      if (!slot || slot.index < run.fromImage || run.delivered.has(slot.index)) continue;
      const query = new URLSearchParams({ filename: file.filename, subfolder: file.subfolder, type: file.type });
      const res = await this.request(`/view?${query}`);
      if (!res.ok) throw new Error(`ComfyUI 未返回图片 ${file.filename}（HTTP ${res.status}）`);
      events.push({ type: 'image', index: slot.index, seed: slot.img.seed, png: Buffer.from(await res.arrayBuffer()) });
      run.delivered.add(slot.index);
    }
  }

  private nextImage(run: Run): number {
    let i = run.fromImage;
    while (run.delivered.has(i)) i++;
    return i;
  }

  private forget(taskId: string, promptId: string) {
    this.runs.delete(taskId);
    this.inbox.delete(promptId);
  }

  private async historyOf(promptId: string) {
    const res = await this.request(`/history/${encodeURIComponent(promptId)}`);
    if (!res.ok) throw new Error(`ComfyUI 历史记录不可用（HTTP ${res.status}）`);
    const body = (await res.json()) as Record<
      string,
      {
        outputs: Record<string, { images?: { filename: string; subfolder: string; type: string }[] }>;
        status: { completed: boolean; messages: [string, unknown][] };
      }
    >;
    return body[promptId] ?? null;
  }

  private async queued(promptId: string): Promise<boolean> {
    const queue = await this.queue();
    return queue.running.includes(promptId) || queue.pending.includes(promptId);
  }

  private async queue(): Promise<{ running: string[]; pending: string[] }> {
    const res = await this.request('/queue');
    if (!res.ok) throw new Error(`ComfyUI 队列不可用（HTTP ${res.status}）`);
    const body = (await res.json()) as { queue_running: unknown[][]; queue_pending: unknown[][] };
    return { running: body.queue_running.map((e) => String(e[1])), pending: body.queue_pending.map((e) => String(e[1])) };
  }

  private async request(path: string, init: RequestInit = {}): Promise<Response> {
    const base = await this.endpoint.url();
    return fetch(`${base}${path}`, { ...init, headers: { 'content-type': 'application/json' }, signal: AbortSignal.timeout(30_000) });
  }

  /** The one WebSocket, opened (again) when a run starts; its messages sorted by prompt. */
  private async connect(): Promise<void> {
    if (this.ws?.readyState === WebSocket.OPEN) return;
    this.opening ??= (async () => {
      const base = await this.endpoint.url();
      const ws = new WebSocket(`${base.replace(/^http/, 'ws')}/ws?clientId=${this.clientId}`);
      await new Promise<void>((resolve, reject) => {
        ws.once('open', () => resolve());
        ws.once('error', reject);
      });
      ws.on('message', (data, binary) => {
        if (binary) return; // preview frames
        const parsed = comfyWsMessageSchema.safeParse(safeJson(String(data)));
        if (!parsed.success || parsed.data.type === 'status') return;
        const id = parsed.data.data.prompt_id;
        const box = this.inbox.get(id) ?? [];
        if (box.length < UNCLAIMED_KEPT || [...this.runs.values()].some((r) => r.promptId === id)) box.push(parsed.data);
        this.inbox.set(id, box);
      });
      ws.on('close', () => {
        if (this.ws === ws) this.ws = null;
      });
      ws.on('error', () => {});
      this.ws = ws;
    })().finally(() => (this.opening = null));
    return this.opening;
  }

  /** Waits for a pong on the open socket (ComfyUI's aiohttp and the embedded server answer pings); at most 2 s. */
  private async flushSocket(): Promise<void> {
    const ws = this.ws;
    if (ws?.readyState !== WebSocket.OPEN) return;
    await new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        ws.off('pong', done);
        ws.off('close', done);
        resolve();
      };
      const timer = setTimeout(done, 2000);
      ws.on('pong', done);
      ws.on('close', done);
      try {
        ws.ping();
      } catch {
        done();
      }
    });
  }

  async close(): Promise<void> {
    this.ws?.terminate();
    this.ws = null;
    await this.endpoint.close?.();
  }
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}
