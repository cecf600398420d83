/**
 * The embedded ComfyUI: a server speaking ComfyUI's own API on a loopback port, so the console's
 * ComfyUI client (comfy-client.ts) is the same for it and for a real ComfyUI on a GPU machine.
 *
 * - `POST /prompt` queues an API-format graph ({ prompt, client_id }) and answers its prompt_id, or
 *   400 with ComfyUI's `error` and `node_errors` when a node is unknown or an input is wrong;
 * - `/ws?clientId=` carries the run's messages to that client: `execution_start`,
 *   `execution_cached`, `executing`, `progress` (KSampler's steps), `executed` (SaveImage's files),
 *   `execution_success` / `execution_error` / `execution_interrupted`, and `status` to everyone;
 * - `GET /history/<id>`, `GET /queue`, `POST /queue` (delete), `POST /interrupt`, `GET /view`,
 *   `GET /object_info`, `GET /system_stats`.
 *
 * Prompts run one at a time, as in ComfyUI. A KSampler takes the GPU time its batch would take on the
 * reference card (contract `diffusionImageSeconds`, divided by `speedup`) on the given clock; Save
 * Image paints each picture with render.ts from the parameters that reach it, so the same graph gives
 * the same pictures as the embedded painter's txt2img.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import { WebSocketServer, type WebSocket } from 'ws';
import {
  COMFY_NODES,
  PUBLIC_LORAS,
  analyzeComfyGraph,
  comfyGraphSchema,
  type ComfyGraph,
  type ComfyImagePlan,
  type ComfyNodeSpec,
  type ComfyPlan,
  type ComfyWsMessage,
} from '@console/contract';
import type { Clock } from '../../clock.js';
import { EDITOR_PAGE } from './comfy-editor-page.js';
import { renderImage } from './render.js';

interface OutputImage {
  filename: string;
  subfolder: string;
  type: 'output';
}

interface Prompt {
  id: string;
  number: number;
  graph: ComfyGraph;
  plan: ComfyPlan;
  clientId: string | null;
  extra: Record<string, unknown>;
}

interface Running {
  prompt: Prompt;
  /** The node at `index` of the plan's order, when it started (clock ms), whether it was announced. */
  index: number;
  nodeStartedAt: number;
  announced: boolean;
  lastStep: number;
  outputs: Record<string, { images: OutputImage[] }>;
  messages: [string, Record<string, unknown>][];
  interrupted: boolean;
}

interface HistoryEntry {
  prompt: [number, string, ComfyGraph, Record<string, unknown>, string[]];
  outputs: Record<string, { images: OutputImage[] }>;
  status: { status_str: 'success' | 'error'; completed: boolean; messages: [string, Record<string, unknown>][] };
  meta: Record<string, unknown>;
}

/** Finished prompts (and their pictures) kept for /history and /view, oldest dropped first. */
const HISTORY_KEPT = 200;
const LORA_COLORS = new Map(PUBLIC_LORAS.map((l) => [`${l.id}.safetensors`, [...l.color] as [number, number, number]]));

export class EmbeddedComfy {
  private server: http.Server | null = null;
  private wss: WebSocketServer | null = null;
  private listening: Promise<string> | null = null;
  private sockets = new Map<WebSocket, string>();
  private queue: Prompt[] = [];
  private running: Running | null = null;
  private history = new Map<string, HistoryEntry>();
  private files = new Map<string, Buffer>();
  private counter = 0;
  private fileCounter = 0;
  private timer: NodeJS.Timeout | null = null;
  private pumping = false;

  constructor(
    private clock: Clock,
    readonly speedup = 1,
    private tickMs = 50,
  ) {}

  /** Listens on a free loopback port (once); resolves to the base URL. */
  url(): Promise<string> {
    this.listening ??= this.listen((server, done) => server.listen(0, '127.0.0.1', () => done(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)));
    return this.listening;
  }

  /** Listens on a Unix socket instead (an application instance's ComfyUI behind the machine proxy). */
  socket(path: string): Promise<string> {
    this.listening ??= this.listen((server, done) => server.listen(path, () => done(path)));
    return this.listening;
  }

  private listen(start: (server: http.Server, done: (where: string) => void) => void): Promise<string> {
    return new Promise((resolve, reject) => {
      const server = http.createServer((req, res) => void this.handle(req, res));
      const wss = new WebSocketServer({ noServer: true });
      server.on('upgrade', (req, socket, head) => {
        const url = new URL(req.url ?? '/', 'http://x');
        if (url.pathname !== '/ws') return socket.destroy();
        wss.handleUpgrade(req, socket, head, (ws) => this.connected(ws, url.searchParams.get('clientId') || randomUUID().replace(/-/g, '')));
      });
      server.once('error', reject);
      server.unref();
      start(server, resolve);
      this.server = server;
      this.wss = wss;
      this.timer = setInterval(() => void this.pump(), this.tickMs);
      this.timer.unref();
    });
  }

  async close(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    for (const ws of this.sockets.keys()) ws.terminate();
    this.wss?.close();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
    this.server = null;
    this.listening = null;
  }

  // --- HTTP -------------------------------------------------------------------------------------------

  private async handle(req: http.IncomingMessage, res: http.ServerResponse) {
    const url = new URL(req.url ?? '/', 'http://x');
    const route = `${req.method} ${url.pathname}`;
    try {
      if (route === 'GET /') {
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' });
        return res.end(EDITOR_PAGE);
      }
      if (route === 'POST /prompt') return this.queuePrompt(await bodyOf(req), res);
      if (route === 'GET /queue')
        return json(res, 200, { queue_running: this.running ? [entryOf(this.running.prompt)] : [], queue_pending: this.queue.map(entryOf) });
      if (route === 'POST /queue') return this.editQueue(await bodyOf(req), res);
      if (route === 'POST /interrupt') {
        if (this.running) this.running.interrupted = true;
        return json(res, 200, {});
      }
      if (route === 'GET /history')
        return json(res, 200, Object.fromEntries([...this.history].slice(-Number(url.searchParams.get('max_items') ?? HISTORY_KEPT))));
      if (req.method === 'GET' && url.pathname.startsWith('/history/')) {
        const id = decodeURIComponent(url.pathname.slice('/history/'.length));
        const entry = this.history.get(id);
        return json(res, 200, entry ? { [id]: entry } : {});
      }
      if (route === 'GET /view') {
        const file =
          url.searchParams.get('type') === 'output' || !url.searchParams.get('type') ? this.files.get(url.searchParams.get('filename') ?? '') : undefined;
        if (!file) return json(res, 404, { error: 'file not found' });
        res.writeHead(200, { 'content-type': 'image/png', 'content-length': file.length });
        return res.end(file);
      }
      if (route === 'GET /object_info') return json(res, 200, objectInfo());
      if (route === 'GET /system_stats') {
        return json(res, 200, {
          system: { os: process.platform, comfyui_version: 'embedded', python_version: '', embedded_python: false },
          devices: [{ name: 'cpu', type: 'cpu', index: 0, vram_total: 0, vram_free: 0 }],
        });
      }
      return json(res, 404, { error: 'not found' });
    } catch (e) {
      return json(res, 400, { error: { type: 'invalid_prompt', message: (e as Error).message, details: '', extra_info: {} }, node_errors: {} });
    }
  }

  private queuePrompt(body: unknown, res: http.ServerResponse) {
    const b = (body ?? {}) as { prompt?: unknown; client_id?: unknown; extra_data?: unknown };
    const graph = comfyGraphSchema.safeParse(b.prompt);
    if (!graph.success)
      return json(res, 400, {
        error: { type: 'invalid_prompt', message: graph.error.issues[0]?.message ?? 'invalid prompt', details: '', extra_info: {} },
        node_errors: {},
      });
    for (const [id, node] of Object.entries(graph.data)) {
      if (!(node.class_type in COMFY_NODES)) {
        return json(res, 400, {
          error: {
            type: 'invalid_prompt',
            message: `Cannot execute because node ${node.class_type} does not exist.`,
            details: `Node ID '#${id}'`,
            extra_info: {},
          },
          node_errors: {},
        });
      }
    }
    const analysis = analyzeComfyGraph(graph.data);
    if (!analysis.ok) {
      const nodeErrors: Record<string, unknown> = {};
      for (const e of analysis.errors) {
        const key = e.node || '0';
        const entry = (nodeErrors[key] ??= { errors: [], dependent_outputs: [], class_type: graph.data[e.node]?.class_type ?? '' }) as { errors: unknown[] };
        entry.errors.push({ type: 'value_not_valid', message: e.message, details: '', extra_info: {} });
      }
      return json(res, 400, {
        error: { type: 'prompt_outputs_failed_validation', message: 'Prompt outputs failed validation', details: '', extra_info: {} },
        node_errors: nodeErrors,
      });
    }
    const prompt: Prompt = {
      id: randomUUID(),
      number: this.counter++,
      graph: graph.data,
      plan: analysis.plan,
      clientId: typeof b.client_id === 'string' ? b.client_id : null,
      extra: typeof b.extra_data === 'object' && b.extra_data ? (b.extra_data as Record<string, unknown>) : {},
    };
    this.queue.push(prompt);
    this.broadcastStatus();
    return json(res, 200, { prompt_id: prompt.id, number: prompt.number, node_errors: {} });
  }

  private editQueue(body: unknown, res: http.ServerResponse) {
    const b = (body ?? {}) as { delete?: unknown; clear?: unknown };
    if (b.clear === true) this.queue = [];
    if (Array.isArray(b.delete)) this.queue = this.queue.filter((p) => !(b.delete as unknown[]).includes(p.id));
    this.broadcastStatus();
    return json(res, 200, {});
  }

  // --- WebSocket ------------------------------------------------------------------------------------------

  private connected(ws: WebSocket, clientId: string) {
    this.sockets.set(ws, clientId);
    ws.on('close', () => this.sockets.delete(ws));
    ws.on('error', () => this.sockets.delete(ws));
    ws.send(JSON.stringify({ type: 'status', data: { status: { exec_info: { queue_remaining: this.remaining() } }, sid: clientId } }));
  }

  private remaining() {
    return this.queue.length + (this.running ? 1 : 0);
  }

  private broadcastStatus() {
    const text = JSON.stringify({ type: 'status', data: { status: { exec_info: { queue_remaining: this.remaining() } } } });
    for (const ws of this.sockets.keys()) ws.send(text);
  }

  /** A run's message: to its client, and into its history's messages (as ComfyUI keeps them). */
  private send(r: Running, message: ComfyWsMessage, keep = true) {
    if (keep) r.messages.push([message.type, message.data as Record<string, unknown>]);
    if (!r.prompt.clientId) return;
    const text = JSON.stringify(message);
    for (const [ws, id] of this.sockets) if (id === r.prompt.clientId) ws.send(text);
  }

  // --- execution --------------------------------------------------------------------------------------

  /** Moves the running prompt to the clock's now (one pump at a time: painting awaits). */
  private async pump() {
    if (this.pumping) return;
    this.pumping = true;
    try {
      for (;;) {
        if (!this.running) {
          const next = this.queue.shift();
          if (!next) return;
          this.start(next);
        }
        if (!(await this.advance(this.running!))) return;
      }
    } finally {
      this.pumping = false;
    }
  }

  private start(prompt: Prompt) {
    const now = this.clock.now().getTime();
    this.running = { prompt, index: 0, nodeStartedAt: now, announced: false, lastStep: -1, outputs: {}, messages: [], interrupted: false };
    this.broadcastStatus();
    this.send(this.running, { type: 'execution_start', data: { prompt_id: prompt.id, timestamp: now } });
    this.send(this.running, { type: 'execution_cached', data: { prompt_id: prompt.id, nodes: [] } });
  }

  /** True when the run ended (the next prompt may start now). */
  private async advance(r: Running): Promise<boolean> {
    const { plan, id } = r.prompt;
    const now = this.clock.now().getTime();
    while (r.index < plan.order.length) {
      const node = plan.order[r.index]!;
      const type = r.prompt.graph[node]!.class_type;
      if (r.interrupted) return this.finish(r, { type: 'execution_interrupted', data: { prompt_id: id, node_id: node, node_type: type } });
      if (!r.announced) {
        r.announced = true;
        r.lastStep = -1;
        this.send(r, { type: 'executing', data: { prompt_id: id, node, display_node: node } }, false);
      }
      let endsAt = r.nodeStartedAt;
      try {
        if (type === 'KSampler') {
          const sampler = plan.samplers.find((s) => s.node === node)!;
          const duration = (sampler.seconds * 1000) / this.speedup;
          endsAt = r.nodeStartedAt + duration;
          const step = Math.min(sampler.steps, Math.floor(((now - r.nodeStartedAt) / duration) * sampler.steps));
          if (step !== r.lastStep) {
            r.lastStep = step;
            this.send(r, { type: 'progress', data: { prompt_id: id, node, value: step, max: sampler.steps } }, false);
          }
          if (now < endsAt) return false;
        } else if (type === 'SaveImage') {
          const images = await this.save(plan.images.filter((i) => i.node === node));
          r.outputs[node] = { images };
          this.send(r, { type: 'executed', data: { prompt_id: id, node, display_node: node, output: { images } } });
        }
      } catch (e) {
        return this.finish(r, {
          type: 'execution_error',
          data: { prompt_id: id, node_id: node, node_type: type, exception_message: (e as Error).message, exception_type: (e as Error).name },
        });
      }
      r.index++;
      r.nodeStartedAt = endsAt;
      r.announced = false;
    }
    return this.finish(r, { type: 'execution_success', data: { prompt_id: id, timestamp: now } });
  }

  private async save(images: ComfyImagePlan[]): Promise<OutputImage[]> {
    const out: OutputImage[] = [];
    for (const i of images) {
      const png = await renderImage({
        prompt: i.prompt,
        negativePrompt: i.negativePrompt,
        seed: i.seed % 4294967296,
        width: i.width,
        height: i.height,
        steps: i.steps,
        cfg: i.cfg,
        sampler: i.sampler,
        loras: i.loras.map((l) => ({ color: LORA_COLORS.get(l.file)!, weight: l.weight })),
      });
      const prefix = i.filenamePrefix.replace(/[^0-9A-Za-z_-]/g, '').slice(0, 40) || 'ComfyUI';
      const filename = `${prefix}_${String(++this.fileCounter).padStart(5, '0')}_.png`;
      this.files.set(filename, png);
      out.push({ filename, subfolder: '', type: 'output' });
    }
    return out;
  }

  private finish(r: Running, last: ComfyWsMessage): true {
    const { prompt } = r;
    this.send(r, last);
    const ok = last.type === 'execution_success';
    this.history.set(prompt.id, {
      prompt: [prompt.number, prompt.id, prompt.graph, prompt.extra, prompt.plan.images.map((i) => i.node).filter((n, k, all) => all.indexOf(n) === k)],
      outputs: r.outputs,
      status: { status_str: ok ? 'success' : 'error', completed: ok, messages: r.messages },
      meta: {},
    });
    this.forgetOld();
    this.running = null;
    this.send(r, { type: 'executing', data: { prompt_id: prompt.id, node: null, display_node: null } }, false);
    this.broadcastStatus();
    return true;
  }

  private forgetOld() {
    while (this.history.size > HISTORY_KEPT) {
      const [id, entry] = this.history.entries().next().value!;
      for (const o of Object.values(entry.outputs)) for (const i of o.images) this.files.delete(i.filename);
      this.history.delete(id);
    }
  }
}

function entryOf(p: Prompt) {
  return [p.number, p.id, p.graph, p.extra, [...new Set(p.plan.images.map((i) => i.node))]];
}

/** The node definitions in /object_info's shape (what ComfyUI's editor and clients read). */
function objectInfo() {
  return Object.fromEntries(
    Object.entries(COMFY_NODES as Record<string, ComfyNodeSpec>).map(([name, spec]) => [
      name,
      {
        input: {
          required: Object.fromEntries(
            Object.entries(spec.inputs).map(([input, s]) => {
              if (s.kind === 'link') return [input, [s.type]];
              if (s.kind === 'enum') return [input, [s.options, { default: s.default }]];
              if (s.kind === 'string') return [input, ['STRING', { default: s.default, multiline: s.multiline }]];
              return [
                input,
                [
                  s.kind === 'int' ? 'INT' : 'FLOAT',
                  { default: s.default, min: s.min, max: s.max, ...(s.kind === 'int' && s.multipleOf ? { step: s.multipleOf } : {}) },
                ],
              ];
            }),
          ),
        },
        output: spec.outputs,
        output_name: spec.outputs,
        name,
        display_name: spec.title,
        category: 'console',
        output_node: spec.output === true,
      },
    ]),
  );
}

const MAX_BODY = 1 << 20;

async function bodyOf(req: http.IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY) throw new Error('request body too large');
    chunks.push(chunk as Buffer);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  if (!text) return {};
  try {
    return JSON.parse(text);
  } catch {
    throw new Error('request body is not JSON');
  }
}

function json(res: http.ServerResponse, status: number, body: unknown) {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}
