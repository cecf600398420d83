/**
 * Every way in for a machine on host 2 of a fleet (issue 31 §2): two real compute agent processes
 * on the local driver, the console on COMPUTE_DRIVER=fleet, and the web terminal, the SSH gateway
 * and JupyterLab reaching the machine through the console and agent 2's signed channel. The 登录指令
 * names the console's gateway, whatever address agent 2 reports (its default: 127.0.0.1:2222).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client, type SFTPWrapper } from 'ssh2';
import WebSocket from 'ws';
import { API } from '@console/contract';
import { fundedUser } from '../../../test/harness.js';
import { lacks } from '../../../test/host-packages.js';
import { FLEET_HOST_1, FLEET_HOST_2, startFleet, type Fleet } from '../../../test/fleet-kit.js';
import { enterMachine, listen, machineRequest } from '../../../test/local-kit.js';

function sshConnect(port: number, username: string, password: string): Promise<Client> {
  return new Promise((resolve, reject) => {
    const c = new Client();
    c.once('ready', () => resolve(c));
    c.once('error', reject);
    // The gateway's host is this machine (localhost): the IPv4 loopback, where it listens.
    c.connect({ host: '127.0.0.1', port, username, password, readyTimeout: 20_000 });
  });
}

function sshExec(c: Client, command: string): Promise<{ code: number; out: string }> {
  return new Promise((resolve, reject) =>
    c.exec(command, (err, ch) => {
      if (err) return reject(err);
      let out = '';
      let code = -1;
      ch.on('data', (d: Buffer) => (out += d.toString()));
      ch.stderr.on('data', (d: Buffer) => (out += d.toString()));
      ch.on('exit', (n: number) => (code = n));
      ch.on('close', () => resolve({ code, out }));
    }),
  );
}

async function until<T>(read: () => T | Promise<T>, ok: (v: T) => boolean, what: string, ms = 20_000): Promise<T> {
  for (const end = Date.now() + ms; ;) {
    const v = await read();
    if (ok(v)) return v;
    if (Date.now() > end) throw new Error(`${what}: never`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe.skipIf(lacks('bubblewrap', 'openssh-sftp-server', 'python3-notebook'))('fleet: ways into a machine on host 2', () => {
  let fleet: Fleet;
  let base: string;
  beforeAll(async () => {
    fleet = await startFleet({ hosts: [FLEET_HOST_1, FLEET_HOST_2] });
    base = await listen(fleet.server);
  }, 600_000);
  afterAll(async () => fleet?.close(), 120_000);

  it('the web terminal, SSH (exec and sftp) and JupyterLab through the console and agent 2', async () => {
    const { token } = await fundedUser(fleet.server, '500');
    const id = await fleet.runningOn(token, FLEET_HOST_2);
    await until(
      () => fleet.driver().runningIds(),
      (ids) => ids.includes(id),
      'the console to see the machine running on agent 2',
    );

    const ws = new WebSocket(`${base.replace('http', 'ws')}${API.instanceTerminal.replace(':id', id)}?cols=100&rows=30`, {
      headers: { authorization: `Bearer ${token}` },
    });
    let output = '';
    ws.on('message', (data, binary) => binary && (output += (data as Buffer).toString()));
    await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
    ws.send(JSON.stringify({ type: 'input', data: 'echo host-$((1+1)); stty size\r' }));
    await until(
      () => output,
      (o) => /host-2/.test(o) && /30 100/.test(o),
      'the echo and the size',
    );
    ws.close();

    // The 登录指令 names the console's gateway (PUBLIC_BASE_URL's host, the port it listens on), not what agent 2 says.
    const access = (await fleet.kit.instance(token, id)).access!;
    const gateway = { host: new URL(fleet.server.ctx.config.publicBaseUrl).hostname, port: fleet.server.ctx.sshEndpoint.port };
    expect(access.sshCommand).toBe(`ssh -p ${gateway.port} ${access.sshUser}@${gateway.host}`);
    const c = await sshConnect(access.sshPort, access.sshUser, access.sshPassword);
    try {
      expect(await sshExec(c, 'echo on-$((1+1)); exit 4')).toEqual({ code: 4, out: 'on-2\n' });
      const sftp = await new Promise<SFTPWrapper>((resolve, reject) => c.sftp((err, w) => (err ? reject(err) : resolve(w))));
      await new Promise<void>((resolve, reject) => sftp.writeFile('/root/from-sftp.txt', 'host 2\n', (err) => (err ? reject(err) : resolve())));
      expect((await sshExec(c, 'cat /root/from-sftp.txt')).out).toBe('host 2\n');
    } finally {
      c.end();
    }

    const { origin, cookie } = await enterMachine(base, token, `/jupyter/${id}/tree`);
    const status = await until(
      () => machineRequest(`${origin}/jupyter/${id}/api/status`, { headers: { cookie } }),
      (r) => r.status === 200,
      'JupyterLab to answer',
      30_000,
    );
    expect(JSON.parse(status.text)).toHaveProperty('started');
  }, 180_000);
});
