/**
 * A ComfyUI application instance's ComfyUI in the browser: the console's `/app/<id>/` door leads the
 * owner to the root of the instance's own origin, where its ComfyUI answers (page, /prompt, /ws,
 * /view). Nobody else gets in; after logout a page asks to log in again (posting `redirect_login`
 * inside the console's frame) and the API answers 401; a stopped instance has no app.
 */
import { describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { API, SESSION_COOKIE, defaultComfyGraph, type ComfyWsMessage } from '@console/contract';
import { get, json, post, type TestServer } from '../../../test/harness.js';
import { DELAYS, instanceKit, instanceSuite } from '../../../test/instances-kit.js';
import { jobsOf } from '../../jobs/scheduler.js';
import { schedulerDeps } from '../../context.js';
import { enterMachine, listen, localhostLookup, machineRequest } from '../../../test/local-kit.js';

let s: TestServer;
let base = '';
instanceSuite((server) => (s = server));
const kit = instanceKit(() => s);
const COMFY = { imageId: undefined, applicationId: 'comfyui' };

async function consoleBase() {
  base ||= await listen(s);
  return base;
}

/** Waits on the instance's /ws until its prompt ends; the messages about it. */
function untilEnd(origin: string, cookie: string, clientId: string, promptOf: () => string | null): Promise<ComfyWsMessage[]> {
  const ws = new WebSocket(`${origin.replace('http', 'ws')}/ws?clientId=${clientId}`, { headers: { cookie }, lookup: localhostLookup });
  const seen: ComfyWsMessage[] = [];
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no end: ${seen.map((m) => m.type).join(',')}`)), 20_000);
    ws.on('message', (data) => {
      const m = JSON.parse(String(data)) as ComfyWsMessage;
      if (m.type === 'status' || m.data.prompt_id !== promptOf()) return;
      seen.push(m);
      if (m.type === 'execution_success' || m.type === 'execution_error') {
        clearTimeout(timer);
        ws.close();
        resolve([...seen]);
      }
    });
    ws.on('error', reject);
  });
}

describe('ComfyUI application instances', () => {
  it("serve their ComfyUI at the root of the instance's origin, to the owner only, until logout or stop", async () => {
    const at = await consoleBase();
    const u = await kit.fundedUser('100');
    const { id } = await kit.running(u.token, { extra: COMFY });
    expect((await kit.instance(u.token, id)).access!.appUrl).toBe(`${s.ctx.config.publicBaseUrl}/app/${id}/`);

    const { url, origin, cookie } = await enterMachine(at, u.token, `/app/${id}/`);
    expect(url).toBe(`${origin}/`);
    const page = await machineRequest(`${origin}/`, { headers: { cookie } });
    expect(page.status).toBe(200);
    expect(page.text).toContain('Queue Prompt');

    // The editor's calls: queue a prompt, follow it on /ws, fetch the picture.
    let promptId: string | null = null;
    const ended = untilEnd(origin, cookie, 'editor-1', () => promptId);
    await new Promise((r) => setTimeout(r, 200));
    const graph = defaultComfyGraph();
    graph['5']!.inputs = { width: 256, height: 256, batch_size: 1 };
    graph['3']!.inputs.steps = 4;
    const queued = await machineRequest(`${origin}/prompt`, {
      method: 'POST',
      headers: { cookie, 'content-type': 'application/json' },
      body: JSON.stringify({ prompt: graph, client_id: 'editor-1' }),
    });
    expect(queued.status, queued.text).toBe(200);
    promptId = (JSON.parse(queued.text) as { prompt_id: string }).prompt_id;
    const messages = await ended;
    expect(messages.at(-1)!.type).toBe('execution_success');
    const saved = messages.find((m) => m.type === 'executed');
    const file = saved?.type === 'executed' ? saved.data.output!.images![0]!.filename : '';
    const png = await machineRequest(`${origin}/view?filename=${encodeURIComponent(file)}&type=output`, { headers: { cookie } });
    expect(png.status).toBe(200);
    expect(png.headers['content-type']).toBe('image/png');

    // Someone else: not through the door, not with the owner's cookie under another session.
    const other = await kit.fundedUser('10');
    const door = await fetch(`${at}/app/${id}/`, { headers: { cookie: `${SESSION_COOKIE}=${other.token}` }, redirect: 'manual' });
    expect(door.status).toBe(403);

    // Logged out: the page asks to log in (inside the console's frame, by redirect_login), the API says 401.
    await post(s.app, API.logout, {}, u.token);
    const asked = await machineRequest(`${origin}/`, { headers: { cookie, accept: 'text/html' } });
    expect(asked.status).toBe(401);
    expect(asked.text).toContain("postMessage('redirect_login'");
    const api = await machineRequest(`${origin}/queue`, { headers: { cookie } });
    expect(api.status).toBe(401);
  });

  it('a stopped ComfyUI instance, or one without ComfyUI, has no app to open', async () => {
    const at = await consoleBase();
    const u = await kit.fundedUser('100');
    const { id } = await kit.running(u.token, { extra: COMFY });
    const { origin, cookie } = await enterMachine(at, u.token, `/app/${id}/`);
    expect((await machineRequest(`${origin}/queue`, { headers: { cookie } })).status).toBe(200);
    expect((await kit.act(u.token, id, 'stop')).statusCode).toBe(200);
    await kit.settle(DELAYS.stop);
    // The stopped instance's ComfyUI is let go by the sweep (it ran since the page above was opened).
    expect(s.ctx.comfyApps.running()).toContain(id);
    expect(await jobsOf(schedulerDeps(s.ctx))['apps.comfyui-sweep']!.run()).toBe(1);
    expect(s.ctx.comfyApps.running()).not.toContain(id);
    const gone = await machineRequest(`${origin}/queue`, { headers: { cookie } });
    expect(JSON.parse(gone.text)).toMatchObject({ code: 40929001 }); // 实例未运行
    const door = await fetch(`${at}/app/${id}/`, { headers: { cookie: `${SESSION_COOKIE}=${u.token}` }, redirect: 'manual' });
    expect(((await door.json()) as { code: number }).code).toBe(40929001);

    const plain = await kit.running(u.token);
    expect((await kit.instance(u.token, plain.id)).access!.appUrl).toBeNull();
    // The compute center lists the AI drawing instances by their application.
    const listed = json<{ items: { id: string }[] }>(
      await get(s.app, `/upgpu/api/v2.1/instances?filterBy=${encodeURIComponent('application,comfyui|sd-webui')}`, u.token),
    );
    expect(listed.items.map((i) => i.id)).toEqual([id]);
    const refused = await fetch(`${at}/app/${plain.id}/`, { headers: { cookie: `${SESSION_COOKIE}=${u.token}` }, redirect: 'manual' });
    expect(((await refused.json()) as { code: number }).code).toBe(40029007);
  });
});
