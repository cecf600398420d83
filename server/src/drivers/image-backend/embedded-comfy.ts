/**
 * The embedded ComfyUI: a server speaking ComfyUI's own API on a loopback port, so the console's
 * ComfyUI client (comfy-client.ts) is the same for it and for a real ComfyUI on a GPU machine.
 *
 * - `POST /prompt` queues an API-format graph ({ prompt, client_id }) and answers its prompt_id, or
 *   400 with ComfyUI's `error` and `node_errors` when a node is unknown or an input is wrong;
 * - `/ws?clientId=` carries the run's messages to that client: `execution_start`,
 *   `execution_cached`, `executing`, `progress` (KSampler's steps), `executed` (SaveImage's files),
 *   `execution_success` / `execution_error` / `execution_interrupted`, and `status` to everyone;
 * - `GET /prompt` (the queue's length, what clients poll until the server is ready), `GET /history`,
 *   `GET /history/<id>`, `POST /history` (clear, delete), `GET /queue`, `POST /queue` (clear,
 *   delete), `POST /interrupt`, `POST /free`, `GET /view`, `GET /object_info`,
 *   `GET /object_info/<class>`, `GET /system_stats`, `GET /embeddings`, `GET /extensions`,
 *   `GET /features`, `GET /models`, `GET /models/<folder>`;
 * - `POST /upload/image` (multipart: image, subfolder, type, overwrite), answering `{ name,
 *   subfolder, type }` as ComfyUI does. This ComfyUI has no LoadImage node (its graphs make pictures
 *   from text), so an upload is kept to be seen again: `GET /view?type=input` and the list of
 *   `GET /internal/files/input`, as in ComfyUI;
 * - every route also under `/api` (`/api/prompt`, `/api/ws`…), as the current ComfyUI frontend asks.
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
/** Uploaded files kept for /view (a cache: oldest dropped first, by count and by bytes), and the largest taken. */
const UPLOADS_KEPT = 50;
const UPLOAD_BYTES_KEPT = 64 * 1024 * 1024;
const MAX_UPLOAD = 20 * 1024 * 1024;
/** Uploads read at once; more are answered 503 (each is held whole while it is read). */
const UPLOADS_AT_ONCE = 2;
const UPLOAD_TYPES = ['input', 'temp', 'output'] as const;
/** The model folders ComfyUI lists (/models) and what this one has in them. */
const MODEL_FOLDERS: Record<string, () => string[]> = {
  checkpoints: () => comfyOptions('CheckpointLoaderSimple', 'ckpt_name'),
  loras: () => comfyOptions('LoraLoader', 'lora_name'),
  vae: () => [],
  clip: () => [],
  controlnet: () => [],
  upscale_models: () => [],
  embeddings: () => [],
};
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
  /** Uploads by `type/subfolder/name`. */
  private uploads = new Map<string, Buffer>();
  private uploadBytes = 0;
  private uploading = 0;
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
        if (url.pathname !== '/ws' && url.pathname !== '/api/ws') return socket.destroy();
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
    // The current frontend asks for everything under /api; older clients without it.
    const path = url.pathname.startsWith('/api/') ? url.pathname.slice('/api'.length) : url.pathname;
    const route = `${req.method} ${path}`;
    try {
      if (route === 'GET /') {
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' });
        return res.end(EDITOR_PAGE);
      }
      if (route === 'POST /prompt') return this.queuePrompt(await bodyOf(req), res);
      if (route === 'GET /prompt') return json(res, 200, { exec_info: { queue_remaining: this.remaining() } });
      if (route === 'GET /queue')
        return json(res, 200, { queue_running: this.running ? [entryOf(this.running.prompt)] : [], queue_pending: this.queue.map(entryOf) });
      if (route === 'POST /queue') return this.editQueue(await bodyOf(req), res);
      if (route === 'POST /interrupt') return this.interrupt(await bodyOf(req), res);
      if (route === 'POST /free') return json(res, 200, {}); // nothing is held between prompts
      if (route === 'GET /history') return json(res, 200, this.historyItems(url.searchParams));
      if (route === 'POST /history') return this.editHistory(await bodyOf(req), res);
      if (req.method === 'GET' && path.startsWith('/history/')) {
        const id = decodeURIComponent(path.slice('/history/'.length));
        const entry = this.history.get(id);
        return json(res, 200, entry ? { [id]: entry } : {});
      }
      if (route === 'GET /view') return this.view(url.searchParams, res);
      if (route === 'POST /upload/image') return await this.admitUpload(req, res);
      if (req.method === 'GET' && path.startsWith('/internal/files/')) return this.listFiles(decodeURIComponent(path.slice('/internal/files/'.length)), res);
      if (route === 'GET /object_info') return json(res, 200, objectInfo());
      if (req.method === 'GET' && path.startsWith('/object_info/')) {
        const name = decodeURIComponent(path.slice('/object_info/'.length));
        return json(res, 200, Object.hasOwn(COMFY_NODES, name) ? { [name]: nodeInfo(name, (COMFY_NODES as Record<string, ComfyNodeSpec>)[name]!) } : {});
      }
      if (route === 'GET /embeddings' || route === 'GET /extensions') return json(res, 200, []);
      if (route === 'GET /features') return json(res, 200, { supports_preview_metadata: false, max_upload_size: MAX_UPLOAD });
      if (route === 'GET /models') return json(res, 200, Object.keys(MODEL_FOLDERS));
      if (req.method === 'GET' && path.startsWith('/models/')) {
        const folder = decodeURIComponent(path.slice('/models/'.length));
        return Object.hasOwn(MODEL_FOLDERS, folder) ? json(res, 200, MODEL_FOLDERS[folder]!()) : json(res, 404, { error: 'not found' });
      }
      if (route === 'GET /system_stats') {
        return json(res, 200, {
          system: {
            os: process.platform === 'win32' ? 'nt' : 'posix',
            ram_total: 0,
            ram_free: 0,
            comfyui_version: 'embedded',
            python_version: '',
            pytorch_version: '',
            embedded_python: false,
            argv: [],
          },
          devices: [{ name: 'cpu', type: 'cpu', index: 0, vram_total: 0, vram_free: 0, torch_vram_total: 0, torch_vram_free: 0 }],
        });
      }
      return json(res, 404, { error: 'not found' });
    } catch (e) {
      if (e instanceof TooLarge) {
        // The rest of the body is not read: the connection ends with the answer.
        res.once('finish', () => req.destroy());
        res.setHeader('connection', 'close');
        return json(res, 413, { error: e.message });
      }
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

  /** Stops the running prompt; with a prompt_id, only when that prompt is the one running (as ComfyUI does). */
  private interrupt(body: unknown, res: http.ServerResponse) {
    const only = (body as { prompt_id?: unknown } | null)?.prompt_id;
    if (this.running && (typeof only !== 'string' || only === this.running.prompt.id)) this.running.interrupted = true;
    return json(res, 200, {});
  }

  private historyItems(q: URLSearchParams) {
    const all = [...this.history];
    const max = Number(q.get('max_items') ?? all.length);
    const offset = Math.max(0, Number(q.get('offset') ?? 0)) || 0;
    // Newest kept last, as ComfyUI's history; max_items takes the newest, offset skips from the oldest.
    const taken = all.slice(offset);
    return Object.fromEntries(Number.isFinite(max) && max >= 0 ? taken.slice(Math.max(0, taken.length - max)) : taken);
  }

  private editHistory(body: unknown, res: http.ServerResponse) {
    const b = (body ?? {}) as { delete?: unknown; clear?: unknown };
    if (b.clear === true) for (const id of [...this.history.keys()]) this.forget(id);
    if (Array.isArray(b.delete)) for (const id of b.delete) if (typeof id === 'string') this.forget(id);
    return json(res, 200, {});
  }

  /** A picture made here or a file uploaded, by ComfyUI's `filename`, `subfolder` and `type` (default output). */
  private view(q: URLSearchParams, res: http.ServerResponse) {
    const name = q.get('filename') ?? '';
    const subfolder = q.get('subfolder') ?? '';
    const type = q.get('type') || 'output';
    if (!safeName(name) || !safeSubfolder(subfolder)) return json(res, 400, { error: 'invalid file name' });
    const file = (type === 'output' && !subfolder ? this.files.get(name) : undefined) ?? this.uploads.get(uploadKey(type, subfolder, name));
    if (!file) return json(res, 404, { error: 'file not found' });
    res.writeHead(200, { 'content-type': imageTypeOf(file), 'content-length': file.length, 'content-disposition': `filename="${encodeURIComponent(name)}"` });
    return res.end(file);
  }

  /** At most UPLOADS_AT_ONCE uploads are read at once; another is told to retry, its body read and dropped. */
  private async admitUpload(req: http.IncomingMessage, res: http.ServerResponse) {
    if (this.uploading >= UPLOADS_AT_ONCE) {
      res.setHeader('retry-after', '1');
      json(res, 503, { error: 'too many uploads at once' });
      return void drain(req);
    }
    this.uploading++;
    try {
      return await this.upload(req, res);
    } finally {
      this.uploading--;
    }
  }

  /** ComfyUI's image upload: a new name (`name (1).png`) when one is taken by other bytes, unless `overwrite`. */
  private async upload(req: http.IncomingMessage, res: http.ServerResponse) {
    const form = await formOf(req);
    const image = form?.get('image');
    if (!form || image?.filename === undefined) return json(res, 400, { error: 'no image' });
    const field = (key: string) => form.get(key)?.data.toString('utf8');
    const type = field('type') || 'input';
    const subfolder = field('subfolder') ?? '';
    if (!(UPLOAD_TYPES as readonly string[]).includes(type) || !safeSubfolder(subfolder) || !safeName(image.filename))
      return json(res, 400, { error: 'invalid file name' });
    const bytes = image.data;
    const overwrite = ['true', '1'].includes(field('overwrite') ?? '');
    const imageName = image.filename;
    let name = imageName;
    const dot = name.lastIndexOf('.') > 0 ? name.lastIndexOf('.') : name.length;
    for (let i = 1; !overwrite; i++) {
      const there = this.uploads.get(uploadKey(type, subfolder, name));
      if (!there || there.equals(bytes)) break;
      name = `${imageName.slice(0, dot)} (${i})${imageName.slice(dot)}`;
    }
    this.keepUpload(uploadKey(type, subfolder, name), bytes);
    return json(res, 200, { name, subfolder, type });
  }

  /** The newest is kept last; the oldest go while there are too many or too many bytes. */
  private keepUpload(key: string, bytes: Buffer) {
    this.dropUpload(key);
    this.uploads.set(key, bytes);
    this.uploadBytes += bytes.length;
    while (this.uploads.size > UPLOADS_KEPT || this.uploadBytes > UPLOAD_BYTES_KEPT) this.dropUpload(this.uploads.keys().next().value!);
  }

  private dropUpload(key: string) {
    this.uploadBytes -= this.uploads.get(key)?.length ?? 0;
    this.uploads.delete(key);
  }

  /** The files of a folder (`input`, `output`, `temp`), sorted, as ComfyUI's /internal/files lists them. */
  private listFiles(type: string, res: http.ServerResponse) {
    if (!(UPLOAD_TYPES as readonly string[]).includes(type)) return json(res, 400, { error: 'invalid directory type' });
    const names = [...this.uploads.keys()].filter((k) => k.startsWith(`${type}/`)).map((k) => k.slice(type.length + 1).replace(/^\//, ''));
    if (type === 'output') names.push(...this.files.keys());
    return json(res, 200, names.sort());
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
    while (this.history.size > HISTORY_KEPT) this.forget(this.history.keys().next().value!);
  }

  /** A finished prompt and its pictures. */
  private forget(id: string) {
    const entry = this.history.get(id);
    if (!entry) return;
    for (const o of Object.values(entry.outputs)) for (const i of o.images) this.files.delete(i.filename);
    this.history.delete(id);
  }
}

function entryOf(p: Prompt) {
  return [p.number, p.id, p.graph, p.extra, [...new Set(p.plan.images.map((i) => i.node))]];
}

/** The node definitions in /object_info's shape (what ComfyUI's editor and clients read). */
function objectInfo() {
  return Object.fromEntries(Object.entries(COMFY_NODES as Record<string, ComfyNodeSpec>).map(([name, spec]) => [name, nodeInfo(name, spec)]));
}

/** The options of an enum input of a node (the checkpoints, the LoRAs). */
function comfyOptions(node: string, input: string): string[] {
  const s = (COMFY_NODES as Record<string, ComfyNodeSpec>)[node]!.inputs[input]!;
  return s.kind === 'enum' ? [...s.options] : [];
}

function nodeInfo(name: string, spec: ComfyNodeSpec) {
  return {
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
    input_order: { required: Object.keys(spec.inputs) },
    output: spec.outputs,
    output_is_list: spec.outputs.map(() => false),
    output_name: spec.outputs,
    name,
    display_name: spec.title,
    description: '',
    python_module: 'nodes',
    category: 'console',
    output_node: spec.output === true,
  };
}

function uploadKey(type: string, subfolder: string, name: string) {
  return `${type}/${subfolder}/${name}`;
}

/** A file name without a way out of its folder (ComfyUI answers 400 to those). */
function safeName(name: string): boolean {
  return name.length > 0 && name.length <= 255 && !/[/\\\0]/.test(name) && name !== '.' && name !== '..';
}

function safeSubfolder(subfolder: string): boolean {
  return subfolder.length <= 255 && !subfolder.startsWith('/') && !/[\\\0]/.test(subfolder) && !subfolder.split('/').some((p) => p === '..' || p === '.');
}

/** What a file is by its first bytes: a picture of a kind browsers show, or bytes. */
function imageTypeOf(file: Buffer): string {
  if (file.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))) return 'image/png';
  if (file[0] === 0xff && file[1] === 0xd8 && file[2] === 0xff) return 'image/jpeg';
  if (file.subarray(0, 4).toString('latin1') === 'RIFF' && file.subarray(8, 12).toString('latin1') === 'WEBP') return 'image/webp';
  if (file.subarray(0, 4).toString('latin1') === 'GIF8') return 'image/gif';
  return 'application/octet-stream';
}

/** A part of a multipart form: a file (with its file name) or a field. */
interface FormPart {
  filename?: string;
  data: Buffer;
}

const MAX_FORM = MAX_UPLOAD + 64 * 1024;

/**
 * A multipart form (an upload) of at most MAX_FORM bytes, by name (the first part of a name); null when it is
 * not one. The body is held once: a part is a view of it, copied only when it is a small part of a big body
 * (so what is kept counts what it holds).
 */
async function formOf(req: http.IncomingMessage): Promise<Map<string, FormPart> | null> {
  const type = req.headers['content-type'] ?? '';
  const boundary = /^multipart\/form-data\s*;.*\bboundary=(?:"([^"]+)"|([^\s;]+))/i.exec(type);
  if (!boundary) return null;
  const body = await bodyBytes(req, MAX_FORM, 'upload too large');
  const parts = multipartParts(body, boundary[1] ?? boundary[2]!);
  for (const part of parts?.values() ?? []) if (body.length - part.data.length > 64 * 1024) part.data = Buffer.from(part.data);
  return parts;
}

/** The parts of a multipart body, or null when it is not well formed. */
function multipartParts(body: Buffer, boundary: string): Map<string, FormPart> | null {
  const parts = new Map<string, FormPart>();
  const next = Buffer.from(`\r\n--${boundary}`);
  let at = body.indexOf(next.subarray(2));
  if (at < 0) return null;
  for (;;) {
    at += next.length - 2;
    if (body[at] === 0x2d && body[at + 1] === 0x2d) return parts; // the closing --boundary--
    const headersEnd = body.indexOf('\r\n\r\n', at);
    const end = headersEnd < 0 ? -1 : body.indexOf(next, headersEnd + 4);
    if (end < 0) return null;
    const headers = body.toString('utf8', at, headersEnd);
    const name = dispositionParam(headers, 'name');
    if (name !== undefined && !parts.has(name)) parts.set(name, { filename: dispositionParam(headers, 'filename'), data: body.subarray(headersEnd + 4, end) });
    at = end + 2;
  }
}

/** A parameter of a part's Content-Disposition, as browsers write it (quotes and line breaks percent-encoded). */
function dispositionParam(headers: string, key: string): string | undefined {
  const disposition = /^content-disposition:(.*)$/im.exec(headers)?.[1] ?? '';
  const value = new RegExp(`;\\s*${key}="([^"]*)"`, 'i').exec(disposition)?.[1];
  return value?.replace(/%22/g, '"').replace(/%0D/gi, '\r').replace(/%0A/gi, '\n');
}

/** A body of at most `max` bytes, held once (where its length is told) rather than in pieces and then whole. */
async function bodyBytes(req: http.IncomingMessage, max: number, tooLarge: string): Promise<Buffer> {
  // One told too long is still read up to `max` before the 413: answered at once, a proxy in front may be
  // still sending it, and see the connection fail rather than the answer.
  const told = Number(req.headers['content-length']);
  const whole = Number.isSafeInteger(told) && told >= 0 && told <= max ? Buffer.allocUnsafe(told) : null;
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    if (size + chunk.length > (whole?.length ?? max)) throw new TooLarge(tooLarge);
    if (whole) chunk.copy(whole, size);
    else chunks.push(chunk);
    size += chunk.length;
  }
  return whole ? whole.subarray(0, size) : Buffer.concat(chunks, size);
}

/** Reads and drops a request's body (up to MAX_FORM; a longer one ends its connection). */
function drain(req: http.IncomingMessage) {
  let size = 0;
  req.on('data', (chunk: Buffer) => {
    size += chunk.length;
    if (size > MAX_FORM) req.destroy();
  });
}

const MAX_BODY = 1 << 20;

/** A body over its limit: 413, as ComfyUI's server answers. */
class TooLarge extends Error {}

async function bodyOf(req: http.IncomingMessage): Promise<unknown> {
  const text = (await bodyBytes(req, MAX_BODY, 'request body too large')).toString('utf8');
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
