/**
 * An instance's ComfyUI for programs: real ComfyUI clients (@saintno/comfyui-sdk,
 * @stable-canvas/comfyui-client) with the instance's API token wait until it is ready, queue a
 * workflow, follow it over the websocket, read the picture, upload an image and read the
 * checkpoints — through the machine listener, as ComfyUI's own API: at the instance's own address
 * (stable-canvas, given a fetch that resolves `*.localhost`) and at the listener's plain address,
 * which the token alone opens (the SDK, with Node's own fetch). A wrong, replaced or revoked
 * token, another instance's token and another account are refused; a revoked token's websocket
 * is closed.
 */
import http from 'node:http';
import { beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { eq } from 'drizzle-orm';
import { CallWrapper, ComfyApi, PromptBuilder } from '@saintno/comfyui-sdk';
import { Client, plugins } from '@stable-canvas/comfyui-client';
import { API, COMFY_CHECKPOINTS, defaultComfyGraph, type AppToken, type ComfyGraph } from '@console/contract';
import { users } from '../../db/schema.js';
import { del, get, json, post, type TestServer } from '../../../test/harness.js';
import { instanceKit, instanceSuite } from '../../../test/instances-kit.js';
import { listen, localhostLookup, machineRequest } from '../../../test/local-kit.js';

let s: TestServer;
instanceSuite((server) => (s = server));
const kit = instanceKit(() => s);
const COMFY = { imageId: undefined, applicationId: 'comfyui' };
const tokenPath = (id: string) => API.instanceAppToken.replace(':id', id);
/** A PNG of one pixel. */
const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==', 'base64');

// The machine listener starts with the console's.
beforeAll(async () => void (await listen(s)));

/** A running ComfyUI instance of a new user and its API token. */
async function comfyInstance() {
  const u = await kit.fundedUser('100');
  const { id } = await kit.running(u.token, { extra: COMFY });
  const made = await post(s.app, tokenPath(id), {}, u.token);
  expect(made.statusCode, made.body).toBe(200);
  return { user: u, id, ...(json<AppToken>(made) as { token: string; apiUrl: string }) };
}

/** The machine listener's own address: the token names the instance (programs where `<id>.localhost` does not resolve). */
const shared = () => `127.0.0.1:${s.ctx.machineOrigins.port}`;

/** fetch, resolving `*.localhost` to this machine as browsers do (Node's fetch does not). */
async function localhostFetch(input: string | URL | Request, init?: RequestInit): Promise<Response> {
  const req = new Request(input, init);
  const body = req.body ? Buffer.from(await req.arrayBuffer()) : undefined;
  return new Promise((resolve, reject) => {
    const out = http.request(req.url, { method: req.method, headers: Object.fromEntries(req.headers), lookup: localhostLookup }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve(new Response(Buffer.concat(chunks), { status: res.statusCode, headers: res.headers as Record<string, string> })));
      res.on('error', reject);
    });
    out.on('error', reject);
    out.end(body);
  });
}

/** The websocket of `ws`, resolving `*.localhost` the same way. */
class LocalhostWebSocket extends WebSocket {
  constructor(url: string, protocols?: string | string[]) {
    super(url, protocols, { lookup: localhostLookup });
  }
}

/** A small, quick workflow; the id of its SaveImage node. */
function smallGraph(): { graph: ComfyGraph; save: string } {
  const graph = defaultComfyGraph();
  const latent = Object.values(graph).find((n) => n.class_type === 'EmptyLatentImage')!;
  latent.inputs = { ...latent.inputs, width: 256, height: 256, batch_size: 1 };
  const sampler = Object.values(graph).find((n) => n.class_type === 'KSampler')!;
  sampler.inputs.steps = 4;
  return { graph, save: Object.keys(graph).find((k) => graph[k]!.class_type === 'SaveImage')! };
}

describe("an instance's ComfyUI for programs", () => {
  it('@saintno/comfyui-sdk with the Bearer token: ready, checkpoints, a workflow followed to its picture, an upload', async () => {
    const { id, token, apiUrl } = await comfyInstance();
    expect(apiUrl).toBe(s.ctx.machineOrigins.originOf(id));
    const api = new ComfyApi(`http://${shared()}`, 'sdk-client', { credentials: { type: 'bearer_token', token } });
    try {
      // Ready (GET /prompt answers, the features are probed), and its websocket open so no message of the run is missed.
      const connected = new Promise((resolve) => api.on('connected', resolve));
      await api.init(5, 200).waitForReady();
      await connected;
      expect(await api.getCheckpoints()).toEqual(Object.values(COMFY_CHECKPOINTS));
      expect(await api.getEmbeddings()).toEqual([]);

      const { graph, save } = smallGraph();
      // The sampler's steps as the websocket tells them (listened to before the run: the wrapper listens only once it is queued).
      const progress: number[] = [];
      api.on('progress', (e) => progress.push((e as CustomEvent<{ value: number }>).detail.value));
      const builder = new PromptBuilder(graph as never, [] as never[], ['images']).setOutputNode('images', save as never);
      const outputs = await new Promise<Record<string, unknown>>((resolve, reject) => {
        void new CallWrapper(api, builder)
          .onFinished((out) => resolve(out as Record<string, unknown>))
          .onFailed((e) => reject(e))
          .run();
      });
      expect(progress).toContain(4);
      const images = (outputs.images as { images: { filename: string; subfolder: string; type: string }[] }).images;
      const picture = Buffer.from(await (await api.getImage(images[0]!)).arrayBuffer());
      expect(picture.subarray(1, 4).toString()).toBe('PNG');

      const uploaded = await api.uploadImage(PNG, 'cat.png');
      expect(uploaded && uploaded.info).toMatchObject({ name: 'cat.png', subfolder: '', type: 'input' });
      // Kept as ComfyUI keeps inputs: seen again by /view, listed in the input folder.
      const back = Buffer.from(await (await api.getImage({ filename: 'cat.png', subfolder: '', type: 'input' })).arrayBuffer());
      expect(back.equals(PNG)).toBe(true);
      const listed = await api.fetchApi('/internal/files/input');
      expect(await listed.json()).toEqual(['cat.png']);

      // The rest of what clients and the frontend ask for at start and for housekeeping.
      expect(await api.getExtensions()).toEqual([]);
      expect(await api.getFeatures()).toMatchObject({ supports_preview_metadata: false });
      expect(await api.getModelTypes()).toEqual(expect.arrayContaining(['checkpoints', 'loras']));
      expect(await api.getModels('checkpoints')).toEqual(Object.values(COMFY_CHECKPOINTS));
      expect(await api.freeMemory(true, true)).toBe(true);
      expect(Object.keys(await api.getHistories())).toHaveLength(1);
      await api.clearHistory({ clear: true });
      expect(await api.getHistories()).toEqual({});
    } finally {
      api.destroy();
    }
  });

  it("@stable-canvas/comfyui-client at the instance's own address with ?token= (its login plugin): connect, models, enqueue with progress, an upload through /api", async () => {
    const { token, apiUrl } = await comfyInstance();
    const client = new Client({ api_host: new URL(apiUrl).host, clientId: 'canvas-client', fetch: localhostFetch, WebSocket: LocalhostWebSocket as never });
    client.use(new plugins.LoginAuthPlugin({ token }));
    try {
      await client.connect();
      expect(await client.getSDModels()).toEqual(Object.values(COMFY_CHECKPOINTS));
      const { graph } = smallGraph();
      const steps: number[] = [];
      const result = await client.enqueue(graph, { progress: (p) => steps.push(p.value) });
      expect(steps.at(-1)).toBe(4);
      const image = result.images[0]!;
      expect(image.type).toBe('url');
      // Its view URL carries no token (the plugin signs the API's URLs): read it through the API.
      const view = new URL(image.data as string);
      const picture = await client.fetchApi(`${view.pathname}${view.search}`);
      expect(picture.headers.get('content-type')).toBe('image/png');
      expect(
        Buffer.from(await picture.arrayBuffer())
          .subarray(1, 4)
          .toString(),
      ).toBe('PNG');

      const form = new FormData();
      form.append('image', new Blob([PNG]), 'dog.png');
      form.append('overwrite', 'true');
      const uploaded = await client.fetchApi('/api/upload/image', { method: 'POST', body: form });
      expect(await uploaded.json()).toEqual({ name: 'dog.png', subfolder: '', type: 'input' });
    } finally {
      client.close();
    }
  });

  it("the instance's own origin takes the token too; wrong, replaced, revoked and other instances' tokens are refused", async () => {
    const a = await comfyInstance();
    const b = await comfyInstance();
    const own = a.apiUrl;
    const ask = (url: string, auth?: string) => machineRequest(url, auth ? { headers: { authorization: `Bearer ${auth}` } } : {});

    const ok = await ask(`${own}/prompt`, a.token);
    expect(ok.status, ok.text).toBe(200);
    expect(JSON.parse(ok.text)).toEqual({ exec_info: { queue_remaining: 0 } });
    expect((await ask(`${own}/api/queue?token=${encodeURIComponent(a.token)}`)).status).toBe(200);
    // On the shared address nothing may run as a page.
    const sharedAnswer = await ask(`http://${shared()}/prompt`, a.token);
    expect(sharedAnswer.headers['content-security-policy']).toBe('sandbox');

    // A made-up token, one instance's token on another's origin, a token on nobody's instance.
    const wrong = a.token.slice(0, -4) + 'AAAA';
    for (const [url, t] of [
      [`${own}/prompt`, wrong],
      [`${own}/prompt`, b.token],
      [`http://${shared()}/prompt`, wrong],
      [`http://${shared()}/prompt`, 'cui_not-a-token'],
    ] as const) {
      const refused = await ask(url, t);
      expect(refused.status, url).toBe(401);
      expect(JSON.parse(refused.text).code).toBe(40129001);
    }
    // Another account can neither read nor replace the instance's token.
    expect((await get(s.app, tokenPath(a.id), b.user.token)).statusCode).toBe(404);
    expect((await post(s.app, tokenPath(a.id), {}, b.user.token)).statusCode).toBe(404);

    // A websocket opened with the token is closed when the token is revoked; the token is refused from then on.
    const ws = new WebSocket(`ws://${shared()}/ws?clientId=watched&token=${encodeURIComponent(a.token)}`, { lookup: localhostLookup });
    const closed = new Promise<number>((resolve) => ws.once('close', (code) => resolve(code)));
    await new Promise((resolve, reject) => (ws.once('message', resolve), ws.once('error', reject)));
    const revoked = await del(s.app, tokenPath(a.id), a.user.token);
    expect(json<AppToken>(revoked).token).toBeNull();
    expect(await closed).toBe(4403);
    expect((await ask(`${own}/prompt`, a.token)).status).toBe(401);

    // A new token replaces the one before at once.
    const first = json<AppToken>(await post(s.app, tokenPath(a.id), {}, a.user.token)).token!;
    const second = json<AppToken>(await post(s.app, tokenPath(a.id), {}, a.user.token)).token!;
    expect(second).not.toBe(first);
    expect((await ask(`${own}/prompt`, first)).status).toBe(401);
    expect((await ask(`${own}/prompt`, second)).status).toBe(200);
    expect(json<AppToken>(await get(s.app, tokenPath(a.id), a.user.token)).token).toBe(second);

    // The account is looked at on every request too: a disabled one's token opens nothing.
    await s.ctx.db.update(users).set({ disabled: true }).where(eq(users.id, a.user.user.id));
    const disabled = await ask(`${own}/prompt`, second);
    expect(disabled.status).toBe(403);
    expect(JSON.parse(disabled.text).code).toBe(40300003);
  });

  it('an upload over the limit is refused with 413, and the connection is not left half-read', async () => {
    const { token } = await comfyInstance();
    const form = new FormData();
    form.append('image', new Blob([Buffer.alloc(25 * 1024 * 1024, 7)]), 'huge.png');
    const auth = { authorization: `Bearer ${token}` };
    const refused = await fetch(`http://${shared()}/upload/image`, { method: 'POST', body: form, headers: auth });
    expect(refused.status).toBe(413);
    expect((await fetch(`http://${shared()}/prompt`, { headers: auth })).status).toBe(200);
    // (A connection left with an unread body kept the server from closing after this file.)
  });

  it('an instance without ComfyUI has no token to make', async () => {
    const u = await kit.fundedUser('100');
    const { id } = await kit.running(u.token);
    const refused = await post(s.app, tokenPath(id), {}, u.token);
    expect(json<{ code: number }>(refused).code).toBe(40029007);
    expect(json<AppToken>(await get(s.app, tokenPath(id), u.token))).toEqual({ token: null, apiUrl: null });
  });
});
