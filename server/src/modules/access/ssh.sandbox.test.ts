/**
 * The SSH gateway on real sandboxes: the login command and password of the detail page log into
 * that instance (commands, a pty shell, sftp), and nothing else does; a public key of 账号中心 logs
 * into the instances its user manages, until it is deleted.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BaseAgent, Client, utils as sshUtils, type ClientChannel, type ParsedKey, type SFTPWrapper } from 'ssh2';
import { eq } from 'drizzle-orm';
import { API, type Instance } from '@console/contract';
import { instances } from '../../db/schema.js';
import { del, ed25519KeyPair, get, json, post, put, startTestServer, type TestServer } from '../../../test/harness.js';
import { lacks } from '../../../test/host-packages.js';
import { listen, localEnv, localKit } from '../../../test/local-kit.js';

let s: TestServer;
const kit = localKit(() => s);

function connect(access: { sshPort: number; sshUser: string }, password: string): Promise<Client> {
  return new Promise((resolve, reject) => {
    const c = new Client();
    c.once('ready', () => resolve(c));
    c.once('error', reject);
    c.connect({ host: '127.0.0.1', port: access.sshPort, username: access.sshUser, password, readyTimeout: 10_000 });
  });
}

/** Logs in with a private key (OpenSSH format); rejects when the gateway refuses it. */
function connectWithKey(port: number, username: string, privateKey: string): Promise<Client> {
  return new Promise((resolve, reject) => {
    const c = new Client();
    c.once('ready', () => resolve(c));
    c.once('error', reject);
    c.connect({ host: '127.0.0.1', port, username, privateKey, readyTimeout: 10_000 });
  });
}

/** Offers `publicKey` but signs with another private key (an agent that does not hold the key): what an impostor would do. */
function connectSigningWith(port: number, username: string, publicKey: string, otherPrivate: string): Promise<Client> {
  const signer = sshUtils.parseKey(otherPrivate) as ParsedKey;
  const offered = sshUtils.parseKey(publicKey) as ParsedKey;
  class Impostor extends BaseAgent {
    getIdentities(cb: (err: Error | undefined, keys?: ParsedKey[]) => void) {
      cb(undefined, [offered]);
    }
    sign(_key: ParsedKey, data: Buffer, _options: unknown, cb?: (err: Error | undefined, signature?: Buffer) => void) {
      cb?.(undefined, signer.sign(data));
    }
  }
  return new Promise((resolve, reject) => {
    const c = new Client();
    c.once('ready', () => resolve(c));
    c.once('error', reject);
    c.connect({ host: '127.0.0.1', port, username, agent: new Impostor(), readyTimeout: 10_000 });
  });
}

function run(c: Client, command: string): Promise<{ code: number; out: string }> {
  return new Promise((resolve, reject) =>
    c.exec(command, (err, ch) => {
      if (err) return reject(err);
      let out = '';
      let code = -1;
      ch.on('data', (d: Buffer) => (out += d.toString()));
      ch.stderr.on('data', (d: Buffer) => (out += d.toString()));
      ch.on('exit', (c: number) => (code = c));
      ch.on('close', () => resolve({ code, out }));
    }),
  );
}

function closed(c: Client): Promise<void> {
  return new Promise((resolve) => c.once('close', () => resolve()));
}

function diskOf(id: string) {
  return kit.dataDisk(id);
}

beforeAll(async () => {
  s = await startTestServer({ env: localEnv() });
  await listen(s);
});
afterAll(async () => s.close());

describe.skipIf(lacks('bubblewrap', 'openssh-sftp-server'))('SSH gateway', () => {
  it('logs in with the detail page password: commands, exit codes, a pty shell, sftp both ways', async () => {
    const u = await kit.fundedUser('100');
    const id = await kit.runningInstance(u.token);
    const a = (await kit.instance(u.token, id)).access!;
    // The host of PUBLIC_BASE_URL (unset here: localhost), the gateway's port.
    expect(a).toMatchObject({ sshHost: 'localhost', sshPort: s.ctx.sshEndpoint.port, sshUser: 'root' });
    expect(a.sshCommand).toBe(`ssh -p ${s.ctx.sshEndpoint.port} root@localhost`);
    writeFileSync(path.join(await diskOf(id), 'note.txt'), 'on-the-data-disk\n');

    const c = await connect(a, a.sshPassword);
    const uname = await run(c, 'uname -a');
    expect(uname.code).toBe(0);
    expect(uname.out).toMatch(/^Linux instance-/);
    expect(await run(c, 'cat /root/autodl-tmp/note.txt')).toEqual({ code: 0, out: 'on-the-data-disk\n' });
    expect((await run(c, 'exit 3')).code).toBe(3);

    // A command whose channel closes (Ctrl-C, a dropped client) ends inside the machine too.
    await new Promise<void>((resolve, reject) =>
      c.exec('sleep 321', (err, ch) => {
        if (err) return reject(err);
        setTimeout(() => {
          ch.close();
          resolve();
        }, 300);
      }),
    );
    const left = await kit.processesIn(id, (lines) => !lines.some((l) => l.includes('sleep 321')));
    expect(left.filter((l) => l.includes('sleep 321'))).toEqual([]);
    expect(
      left.some((l) => l.includes('sleep 3600')),
      'the listing sees the sandbox init',
    ).toBe(true);

    const shell = await new Promise<ClientChannel>((resolve, reject) =>
      c.shell({ term: 'xterm', cols: 100, rows: 30 }, (e, ch) => (e ? reject(e) : resolve(ch))),
    );
    let screen = '';
    shell.on('data', (d: Buffer) => (screen += d.toString()));
    shell.write('echo pty-$((2+3)); stty size\n');
    for (let i = 0; i < 100 && !/30 100/.test(screen); i++) await new Promise((r) => setTimeout(r, 30));
    expect(screen).toContain('pty-5');
    expect(screen).toMatch(/30 100/);
    shell.end();

    const sftp = await new Promise<SFTPWrapper>((resolve, reject) => c.sftp((e, w) => (e ? reject(e) : resolve(w))));
    await new Promise<void>((resolve, reject) => sftp.writeFile('/root/autodl-tmp/uploaded.txt', 'via-sftp\n', (e) => (e ? reject(e) : resolve())));
    expect(readFileSync(path.join(await diskOf(id), 'uploaded.txt'), 'utf8')).toBe('via-sftp\n');
    const back = await new Promise<Buffer>((resolve, reject) => sftp.readFile('/root/autodl-tmp/note.txt', (e, b) => (e ? reject(e) : resolve(b))));
    expect(back.toString()).toBe('on-the-data-disk\n');
    // The host's files are not there to take.
    const hostRoot = await new Promise<string[]>((resolve) => sftp.readdir('/root', (e, list) => resolve(e ? [] : list.map((f) => f.filename))));
    expect(hostRoot).not.toContain('.npm');
    c.end();
  });

  it('a password names one machine: another user gets into theirs only, a wrong one gets nowhere', async () => {
    const a = await kit.fundedUser('100');
    const b = await kit.fundedUser('100');
    const idA = await kit.runningInstance(a.token);
    const idB = await kit.runningInstance(b.token);
    const accessB = (await kit.instance(b.token, idB)).access!;
    const c = await connect(accessB, accessB.sshPassword);
    expect((await run(c, 'hostname')).out.trim()).toBe(`instance-${idB.slice(0, 8)}`);
    c.end();
    const accessA = (await kit.instance(a.token, idA)).access!;
    await expect(connect(accessA, `${accessA.sshPassword}x`)).rejects.toThrow(/authentication methods failed/);
    await expect(connect({ ...accessA, sshUser: 'admin' }, accessA.sshPassword)).rejects.toThrow(/authentication methods failed/);
  });

  it('ends the session when the password is reset or the machine stops', async () => {
    const u = await kit.fundedUser('100');
    const id = await kit.runningInstance(u.token);
    const a = (await kit.instance(u.token, id)).access!;
    const first = await connect(a, a.sshPassword);
    const ended = closed(first);
    const reset = await put(s.app, API.instancePassword.replace(':id', id), undefined, u.token);
    expect(reset.statusCode, reset.body).toBe(200);
    await ended;
    const fresh = (await kit.instance(u.token, id)).access!;
    expect(fresh.sshPassword).not.toBe(a.sshPassword);
    await expect(connect(a, a.sshPassword)).rejects.toThrow(/authentication methods failed/);

    const second = await connect(fresh, fresh.sshPassword);
    const stopped = closed(second);
    await kit.act(u.token, id, 'stop');
    await stopped;
    await kit.reach(u.token, id, 'Stopped');
    await expect(connect(fresh, fresh.sshPassword)).rejects.toThrow(/authentication methods failed/);
  });

  // Last: it locks 127.0.0.1 out for ten minutes.
  it("logs in with a public key of 账号中心: into the instance its user name names, nobody else's, and not after the key is deleted", async () => {
    const u = await kit.fundedUser('100');
    const other = await kit.fundedUser('100');
    const first = await kit.runningInstance(u.token);
    const theirs = await kit.runningInstance(other.token);
    const port = s.ctx.sshEndpoint.port;
    const pair = ed25519KeyPair();
    const added = await post(s.app, API.meSshKeys, { name: '笔记本', publicKey: `${pair.public} me@laptop` }, u.token);
    expect(added.statusCode, added.body).toBe(200);
    const key = json<{ id: string; fingerprint: string }>(added);

    // The detail page's command names the machine; plain root never logs in with a key (someone
    // else may have added this public key to their own account).
    const a = (await kit.instance(u.token, first)).access!;
    expect(a.sshKeyCommand).toBe(`ssh -p ${port} root.${first.slice(0, 8)}@localhost`);
    await expect(connectWithKey(port, 'root', pair.private)).rejects.toThrow(/authentication/i);
    const plain = await connectWithKey(port, `root.${first.slice(0, 8)}`, pair.private);
    expect((await run(plain, 'hostname')).out).toBe(`instance-${first.slice(0, 8)}\n`);
    plain.end();
    const second = await kit.runningInstance(u.token);
    const named = await connectWithKey(port, `root.${second.slice(0, 8)}`, pair.private);
    expect((await run(named, 'hostname')).out).toBe(`instance-${second.slice(0, 8)}\n`);
    // The password works under that name too.
    const byPassword = await connect({ sshPort: port, sshUser: `root.${first.slice(0, 8)}` }, a.sshPassword);
    expect((await run(byPassword, 'hostname')).out).toBe(`instance-${first.slice(0, 8)}\n`);
    byPassword.end();
    // The key's holder must prove it: the public key offered, a signature made with another key, is refused.
    await expect(connectSigningWith(port, `root.${first.slice(0, 8)}`, pair.public, ed25519KeyPair().private)).rejects.toThrow(/authentication/i);
    // Another user's instance, named: refused. A key nobody added: refused.
    await expect(connectWithKey(port, `root.${theirs.slice(0, 8)}`, pair.private)).rejects.toThrow(/authentication/i);
    await expect(connectWithKey(port, `root.${first.slice(0, 8)}`, ed25519KeyPair().private)).rejects.toThrow(/authentication/i);
    const listed = json<{ items: { lastUsedAt: string | null }[] }>(await get(s.app, API.meSshKeys, u.token)).items;
    expect(listed[0]!.lastUsedAt).not.toBeNull();

    // Deleting the key ends the session it opened and refuses the next.
    const ended = closed(named);
    expect((await del(s.app, API.meSshKey.replace(':id', key.id), u.token)).statusCode).toBe(200);
    await ended;
    await expect(connectWithKey(port, `root.${second.slice(0, 8)}`, pair.private)).rejects.toThrow(/authentication/i);
  });

  it('lets a child that manages the instance (GPU and 财务 permissions) in with its own key, and not once its main account disables it', async () => {
    const parent = await kit.fundedUser('100');
    const id = await kit.runningInstance(parent.token);
    // A child manages GPU and application instances only (MANAGE_PERMISSIONS), and this host sells
    // none (it has no card): the CPU machine bought is booked as a GPU instance, the gateway's subject here.
    await s.ctx.db.update(instances).set({ category: 'Gpu' }).where(eq(instances.id, id));
    const port = s.ctx.sshEndpoint.port;
    const created = await post(s.app, API.children, { childName: 'ops_key', password: 'Child1234', permissions: { gpu: true, finance: true } }, parent.token);
    expect(created.statusCode, created.body).toBe(200);
    const child = json<{ id: string }>(created);
    const login = await post(s.app, API.childLogin, { parentMobile: parent.mobile, childName: 'ops_key', password: 'Child1234' });
    const childToken = json<{ token: string }>(login).token;
    const pair = ed25519KeyPair();
    expect((await post(s.app, API.meSshKeys, { name: '运维', publicKey: pair.public }, childToken)).statusCode).toBe(200);

    const c = await connectWithKey(port, `root.${id.slice(0, 8)}`, pair.private);
    expect((await run(c, 'hostname')).out).toBe(`instance-${id.slice(0, 8)}\n`);
    // Disabled by its main account: the open session ends, and the key opens nothing more.
    const ended = closed(c);
    expect((await put(s.app, API.child.replace(':id', child.id), { disabled: true }, parent.token)).statusCode).toBe(200);
    await ended;
    await expect(connectWithKey(port, `root.${id.slice(0, 8)}`, pair.private)).rejects.toThrow(/authentication/i);
  });

  it('refuses an address that keeps guessing, even with the right password', async () => {
    const u = await kit.fundedUser('100');
    const id = await kit.runningInstance(u.token);
    const a: Instance['access'] = (await kit.instance(u.token, id)).access!;
    for (let i = 0; i < 10; i++) await expect(connect(a, `wrong-${i}`)).rejects.toThrow();
    await expect(connect(a, a.sshPassword)).rejects.toThrow(/authentication methods failed/);
  });
});
