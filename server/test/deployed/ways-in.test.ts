/**
 * The web terminal's and the 云桌面's WebSockets through HAProxy (issue 31 §1 "Tested as deployed"):
 * three replicas on PostgreSQL behind HAProxy, as in deployed.test.ts, with the compute agent on the
 * real local driver (bubblewrap sandboxes, an image of the host's own system), so a machine has a
 * shell and a desktop to reach.
 *
 * What survives a replica's SIGTERM: a shell lives in the replica that opened it (its pty is that
 * process's end of the agent's channel), so when that replica stops, the browser gets the 1012
 * close (SOCKET_RESTART), connects again with `?resume=<id>`, and HAProxy sends it to a replica that
 * stays — which does not have that shell. It opens a new shell in the same machine (`ready` with
 * `resumed: false` and a new id): the machine and its files are the same, but the stopping replica
 * ended its shells as it went, so the old shell's processes, variables and scrollback are gone (the
 * page keeps what it had already drawn). Resuming the same shell, its scrollback replayed, works
 * only through the replica that holds it (a dropped connection: terminal.sandbox.test.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { API, SOCKET_RESTART, type TerminalServerMessage } from '@console/contract';
import { lacks } from '../host-packages.js';
import { HOST_SYSTEM_IMAGE, sandboxCatalogue } from '../local-kit.js';
import { startCluster, type Cluster, type ReplicaName } from './cluster.js';
import { Client } from './client.js';

const LIST = '/upgpu/api/v2.1/instances';
let cluster: Cluster;
let client: Client;
const fill = (p: string, id: string) => p.replace(':id', id);

/** A web terminal through HAProxy: its output, its control messages, the replica it landed on and how it closed. */
class Term {
  output = '';
  messages: TerminalServerMessage[] = [];
  replica: ReplicaName | null = null;
  closed: Promise<{ code: number; reason: string }>;
  private constructor(readonly ws: WebSocket) {
    ws.on('upgrade', (res) => (this.replica = (res.headers['x-replica'] as ReplicaName | undefined) ?? null));
    ws.on('message', (data, binary) => {
      if (binary) this.output += (data as Buffer).toString();
      else this.messages.push(JSON.parse(data.toString()) as TerminalServerMessage);
    });
    this.closed = new Promise((resolve) => ws.once('close', (code, reason) => resolve({ code, reason: reason.toString() })));
  }

  static open(id: string, token: string, query = ''): Promise<Term> {
    const ws = new WebSocket(`${cluster.url.replace('http', 'ws')}${fill(API.instanceTerminal, id)}${query}`, {
      headers: { authorization: `Bearer ${token}` },
    });
    const term = new Term(ws);
    return new Promise((resolve, reject) => {
      ws.once('open', () => resolve(term));
      ws.once('error', reject);
    });
  }

  /**
   * Opens until the shell is there. A replica's agent driver reads which machines run (the channel's
   * state) from its first use on, every second: the first terminal a replica is asked for right after
   * the machine started may be refused with 实例未运行 once; the page's 重新连接 then gets it.
   */
  static async openReady(id: string, token: string, query = ''): Promise<Term> {
    for (let i = 0; ; i++) {
      const term = await Term.open(id, token, query);
      for (let t = 0; t < 250 && !term.ready() && !term.messages.some((m) => m.type === 'closed'); t++) await new Promise((r) => setTimeout(r, 20));
      if (term.ready() || i === 10) return term;
      await term.closed;
      await new Promise((r) => setTimeout(r, 300));
    }
  }

  ready() {
    return this.messages.find((m) => m.type === 'ready') as Extract<TerminalServerMessage, { type: 'ready' }> | undefined;
  }

  type(line: string) {
    this.ws.send(JSON.stringify({ type: 'input', data: `${line}\r` }));
  }

  async waitFor(re: RegExp, ms = 20_000): Promise<void> {
    for (const end = Date.now() + ms; Date.now() < end;) {
      if (re.test(this.output)) return;
      await new Promise((r) => setTimeout(r, 20));
    }
    throw new Error(`never saw ${re}: ${JSON.stringify(this.output.slice(-500))} ${JSON.stringify(this.messages)}`);
  }
}

/** Buys a machine of `sizeId` on the host's own system and waits until it runs (the replicas' reconcilers tick by themselves). */
async function runningInstance(token: string, sizeId: string): Promise<string> {
  const order = { sizeId, regionId: 'bj-b', imageId: HOST_SYSTEM_IMAGE, dataDiskGb: 20, cycle: 'Usage', duration: 1 };
  const made = await client.post(API.orderCreate, order, token);
  expect(made.status, made.text).toBe(200);
  const orders = await client.get<{ items: { resourceId: string }[] }>('/order/api/v2.1/orders?pageSize=1', token);
  const id = orders.body.items[0]!.resourceId;
  const settled = await client.until(
    () => client.get<{ status: string }>(`${LIST}/${id}`, token),
    (a) => ['Running', 'Failed'].includes(a.body.status),
    `instance ${id} to run`,
    40_000,
  );
  expect(settled.body.status, settled.text).toBe('Running');
  return id;
}

/** The desktop socket's first RFB message (the server's protocol version) through HAProxy, retrying while the desktop starts. */
async function rfbGreeting(id: string, token: string): Promise<string> {
  for (let i = 0; i < 150; i++) {
    const greeting = await new Promise<string | null>((resolve) => {
      const ws = new WebSocket(`${cluster.url.replace('http', 'ws')}${fill(API.instanceDesktop, id)}`, { headers: { authorization: `Bearer ${token}` } });
      ws.once('message', (data) => {
        resolve((data as Buffer).toString());
        ws.close();
      });
      ws.once('close', () => resolve(null));
      ws.once('error', () => resolve(null));
    });
    if (greeting) return greeting;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error('the desktop never answered');
}

let mobileSeq = 0;
async function fundedUser() {
  const u = await client.register(`139${String(Date.now() % 100000).padStart(5, '0')}${String(++mobileSeq).padStart(3, '0')}`);
  await client.certify(u.token);
  await client.recharge(u.token, '100');
  return u;
}

describe.skipIf(lacks('bubblewrap'))('ways in through HAProxy (the agent on the local driver)', () => {
  beforeAll(async () => {
    // The sandbox tests' catalogue: the host's own system as an image, no OCI image to build.
    cluster = await startCluster({ env: { CATALOGUE_FILE: sandboxCatalogue() }, agentEnv: { COMPUTE_AGENT_DRIVER: 'local' } });
    client = new Client(cluster.url);
  }, 240_000);
  afterAll(async () => cluster?.close(), 60_000);

  it('web terminal: echo comes back; SIGTERM of its replica closes it with 1012 and the page reattaches through another replica', async () => {
    const u = await fundedUser();
    const id = await runningInstance(u.token, 'gen-c2m4');
    const first = await Term.openReady(id, u.token);
    first.type('MARK=before-restart; sleep 4242 & echo hi-from-$((40+2))');
    await first.waitFor(/hi-from-42/);
    const shellId = first.ready()!.id;
    const holder = first.replica!;
    expect(holder).toMatch(/^r[123]$/);

    cluster.replicas.get(holder)!.process.kill('SIGTERM');
    expect(await first.closed).toEqual({ code: SOCKET_RESTART.code, reason: SOCKET_RESTART.reason });

    // What the page does on 1012: connect again, asking for its shell. HAProxy has the stopping replica out.
    const again = await Term.openReady(id, u.token, `?resume=${shellId}&since=${first.output.length}`);
    expect(again.replica).not.toBe(holder);
    // Another replica has no such shell: a new one in the same machine, not the old one resumed.
    expect(again.ready()).toMatchObject({ resumed: false, lost: 0 });
    expect(again.ready()!.id).not.toBe(shellId);
    again.type('echo "mark=[$MARK]" on-$((6*7))');
    await again.waitFor(/mark=\[\] on-42/);
    expect(again.output).not.toContain('hi-from-42');
    // Not asserted: that what the old shell started (its `sleep 4242 &`) is gone from the machine once its replica has
    // stopped. It was in 3 of 4 clean-clone runs on 2026-11-29, still there 10 s after the replica exited, although the
    // bridge now ends its channel on hang-up; an open defect (issue 31's note), not this test's promise.
    await cluster.replicas.get(holder)!.exited;
    again.ws.close();
  }, 120_000);

  describe.skipIf(lacks('desktop'))('the 云桌面', () => {
    it("relays the owner's noVNC socket to the desktop's VNC server through HAProxy", async () => {
      const u = await fundedUser();
      const id = await runningInstance(u.token, 'dsk-c4m8');
      expect(await rfbGreeting(id, u.token)).toMatch(/^RFB 003\.00\d\n$/);
    }, 120_000);
  });
});
