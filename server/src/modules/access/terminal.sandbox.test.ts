/**
 * The web terminal on real sandboxes (COMPUTE_DRIVER=local): a user's WebSocket reaches a login
 * shell inside their running instance and nobody else's; a dropped connection resumes; logging out
 * or stopping the instance closes it at once.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import WebSocket from 'ws';
import { API, type TerminalServerMessage } from '@console/contract';
import { post, startTestServer, type TestServer } from '../../../test/harness.js';
import { lacks } from '../../../test/host-packages.js';
import { listen, localEnv, localKit } from '../../../test/local-kit.js';

let s: TestServer;
let base: string;
const kit = localKit(() => s);
const { reach, runningInstance } = kit;

/** An open terminal: what arrived so far, and waiting for text to appear. */
class Term {
  output = '';
  bytes = 0;
  messages: TerminalServerMessage[] = [];
  closeCode: number | null = null;
  private constructor(readonly ws: WebSocket) {
    ws.on('message', (data, binary) => {
      if (binary) {
        this.bytes += (data as Buffer).length;
        this.output += (data as Buffer).toString();
      } else this.messages.push(JSON.parse(data.toString()) as TerminalServerMessage);
    });
    ws.on('close', (code) => (this.closeCode = code));
  }

  static open(id: string, token: string, query = '', headers: Record<string, string> = {}): Promise<Term> {
    const url = `${base.replace('http', 'ws')}${API.instanceTerminal.replace(':id', id)}${query}`;
    const ws = new WebSocket(url, { headers: { authorization: `Bearer ${token}`, ...headers } });
    const term = new Term(ws);
    return new Promise((resolve, reject) => {
      ws.once('open', () => resolve(term));
      ws.once('unexpected-response', (_req, res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.on('end', () =>
          reject(Object.assign(new Error(body), { status: res.statusCode, body: JSON.parse(body) as { code: number; message: string; detail?: string } })),
        );
      });
      ws.once('error', reject);
    });
  }

  send(m: object | string) {
    this.ws.send(typeof m === 'string' ? m : JSON.stringify(m));
  }

  type(line: string) {
    this.send({ type: 'input', data: `${line}\r` });
  }

  async waitFor(what: RegExp | ((t: Term) => boolean), label = String(what)): Promise<void> {
    const ok = typeof what === 'function' ? what : (t: Term) => what.test(t.output);
    for (let i = 0; i < 200; i++) {
      if (ok(this)) return;
      await new Promise((r) => setTimeout(r, 25));
    }
    throw new Error(`terminal never showed ${label}; got:\n${this.output}\n${JSON.stringify(this.messages)}`);
  }

  ready() {
    return this.messages.find((m) => m.type === 'ready') as Extract<TerminalServerMessage, { type: 'ready' }> | undefined;
  }
}

async function refusal(id: string, token: string, headers: Record<string, string> = {}) {
  const e = (await Term.open(id, token, '', headers).then(
    () => null,
    (err: unknown) => err,
  )) as { status: number; body: { code: number; message: string; detail?: string } } | null;
  expect(e, 'the connection should have been refused').not.toBeNull();
  return e!;
}

beforeAll(async () => {
  s = await startTestServer({ env: localEnv() });
  base = await listen(s);
});
afterAll(async () => s.close());

describe.skipIf(lacks('bubblewrap'))('web terminal', () => {
  it('runs a login shell inside the instance: its hostname, its data disk, resize', async () => {
    const u = await kit.fundedUser('100');
    const id = await runningInstance(u.token);
    expect((await kit.instance(u.token, id)).access).toMatchObject({ terminal: true });
    writeFileSync(path.join(await kit.dataDisk(id), 'note.txt'), 'from-the-data-disk\n');

    const t = await Term.open(id, u.token, '?cols=90&rows=20');
    await t.waitFor((x) => Boolean(x.ready()), 'ready');
    t.type('echo sum-$((6*7)); hostname; cat /root/autodl-tmp/note.txt; stty size');
    await t.waitFor(/sum-42/);
    await t.waitFor(/from-the-data-disk/);
    await t.waitFor(/20 90/);
    expect(t.output).toContain(`instance-${id.slice(0, 8)}`);
    t.send({ type: 'resize', cols: 120, rows: 40 });
    t.type('stty size');
    await t.waitFor(/40 120/);

    // Nonsense is refused with a message and the shell goes on.
    t.send('not json');
    t.send({ type: 'input', data: 5 });
    await t.waitFor((x) => x.messages.filter((m) => m.type === 'error').length === 2, 'two errors');
    t.type('echo still-$((1+1))');
    await t.waitFor(/still-2/);
    t.ws.close();
  });

  it('resumes the same shell after a dropped connection, with what it printed meanwhile', async () => {
    const u = await kit.fundedUser('100');
    const id = await runningInstance(u.token);
    const first = await Term.open(id, u.token);
    await first.waitFor((x) => Boolean(x.ready()), 'ready');
    first.type('export MARK=kept-$((3*3)); sleep 0.5; echo after-drop-$MARK');
    await first.waitFor(/\$MARK\r?\n/);
    const received = first.bytes;
    first.ws.terminate();

    const again = await Term.open(id, u.token, `?resume=${first.ready()!.id}&since=${received}`);
    await again.waitFor(/after-drop-kept-9/);
    expect(again.ready()).toMatchObject({ id: first.ready()!.id, resumed: true });
    again.type('echo $MARK');
    await again.waitFor((x) => x.output.split('kept-9').length === 3, 'kept-9 echoed');
    again.ws.close();
  });

  it('refuses without a session, another user, a cross-site page, a stopped instance', async () => {
    const owner = await kit.fundedUser('100');
    const other = await kit.fundedUser('100');
    const id = await runningInstance(owner.token);

    expect((await refusal(id, 'nonsense')).status).toBe(401);
    const foreign = await refusal(id, other.token);
    expect(foreign.status).toBe(403);
    expect(foreign.body.detail).toContain('无权访问该实例');
    expect((await refusal('00000000-0000-4000-8000-000000000000', owner.token)).status).toBe(403);
    expect((await refusal(id, owner.token, { origin: 'https://evil.example.com' })).status).toBe(403);
    expect((await refusal('not-a-uuid', owner.token)).status).toBe(400);

    await kit.act(owner.token, id, 'stop');
    await reach(owner.token, id, 'Stopped');
    const stopped = await refusal(id, owner.token);
    expect(stopped.status).toBe(409);
    expect(stopped.body.message).toContain('实例未运行');
  });

  it('closes at once when the user logs out, and when the instance stops', async () => {
    const u = await kit.fundedUser('100');
    const id = await runningInstance(u.token);
    const t = await Term.open(id, u.token);
    await t.waitFor((x) => Boolean(x.ready()), 'ready');
    expect((await post(s.app, API.logout, undefined, u.token)).statusCode).toBe(200);
    await t.waitFor((x) => x.closeCode !== null, 'closed after logout');
    expect(t.closeCode).toBe(4000);
    expect(t.messages.at(-1)).toMatchObject({ type: 'closed', message: expect.stringContaining('登录已失效') });
    // The shell inside the machine ended with it.
    const left = await kit.processesIn(id, (lines) => !lines.some((l) => l.startsWith('/bin/bash --login')));
    expect(left.filter((l) => l.startsWith('/bin/bash --login'))).toEqual([]);
    expect(
      left.some((l) => l.includes('sleep 3600')),
      'the listing sees the sandbox init',
    ).toBe(true);

    // A shell left waiting for a reattach (its connection dropped) ends at logout too, not when the wait runs out.
    const again = await kit.fundedUser('100');
    const idle = await runningInstance(again.token);
    const waiting = await Term.open(idle, again.token);
    await waiting.waitFor((x) => Boolean(x.ready()), 'ready');
    const before = s.ctx.terminals.size;
    waiting.ws.close();
    await waiting.waitFor((x) => x.closeCode !== null, 'dropped');
    expect(s.ctx.terminals.size).toBe(before);
    expect((await post(s.app, API.logout, undefined, again.token)).statusCode).toBe(200);
    await vi.waitFor(() => expect(s.ctx.terminals.size).toBe(before - 1), { timeout: 3000, interval: 50 });

    const fresh = await kit.fundedUser('100');
    const id2 = await runningInstance(fresh.token);
    const t2 = await Term.open(id2, fresh.token);
    await t2.waitFor((x) => Boolean(x.ready()), 'ready');
    t2.type('echo up');
    await t2.waitFor(/up\r?\n/);
    await kit.act(fresh.token, id2, 'stop');
    await t2.waitFor((x) => x.closeCode !== null, 'closed after stop');
    expect(t2.messages.at(-1)).toMatchObject({ type: 'closed', message: expect.stringContaining('实例已关机') });
    await reach(fresh.token, id2, 'Stopped');
  });
});
