/**
 * The SSH gateway (`SSH_GATEWAY_PORT`): one SSH server for every instance whose driver gives shells.
 * A login is `ssh -p <port> root@<host>` with the machine password of the detail page; the password
 * (random per instance) says which machine. Inside, a shell or command runs in the instance's sandbox
 * (with a pty when the client asks for one), and the `sftp` subsystem is OpenSSH's sftp-server run
 * there too, so `sftp` and `scp` work. Wrong passwords are limited per address; a session ends when
 * its machine stops or its password is reset.
 */
import { spawn as spawnProcess } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { spawn as spawnPty } from 'node-pty';
import ssh2, { type Connection, type PseudoTtyInfo, type ServerChannel } from 'ssh2';
import type { ComputeDriver, ShellCommand } from '../../drivers/compute/types.js';

/** Failed logins an address may make in `FAIL_WINDOW_MS` before it is refused outright. */
const MAX_FAILURES = 10;
const FAIL_WINDOW_MS = 10 * 60_000;
const RECHECK_MS = 3000;
const SFTP_SERVER = '/usr/lib/openssh/sftp-server';

export interface SshGatewayDeps {
  driver: ComputeDriver & { runningIds(): string[] };
  /** Which of these running instances the user name and password log into (InstanceService.sshLogin). */
  login(instanceIds: string[], user: string, password: string): Promise<string | null>;
  /** Where the host key is kept (created on first start). */
  hostKeyFile: string;
  log: (message: string) => void;
}

interface Login {
  client: Connection;
  instanceId: string;
  user: string;
  password: string;
}

export class SshGateway {
  private readonly server: ssh2.Server;
  private readonly failures = new Map<string, { count: number; since: number }>();
  private readonly logins = new Set<Login>();
  private timer: NodeJS.Timeout | null = null;

  constructor(private readonly deps: SshGatewayDeps) {
    this.server = new ssh2.Server({ hostKeys: [hostKey(deps.hostKeyFile)] }, (client, info) => this.accept(client, info.ip));
  }

  async listen(port: number, host: string): Promise<number> {
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(port, host, () => resolve());
    });
    this.timer = setInterval(() => void this.recheck(), RECHECK_MS);
    this.timer.unref();
    return (this.server.address() as AddressInfo).port;
  }

  async close(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    for (const l of this.logins) l.client.end();
    this.logins.clear();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private accept(client: Connection, ip: string) {
    let login: Login | null = null;
    client.on('error', () => {}); // a client that goes away mid-handshake is not the server's problem
    client.on('authentication', (ctx) => {
      if (ctx.method !== 'password') return ctx.reject(['password']);
      if (this.limited(ip)) return ctx.reject();
      void this.deps.login(this.deps.driver.runningIds(), ctx.username, ctx.password).then(
        (instanceId) => {
          if (!instanceId) {
            this.failed(ip);
            return ctx.reject(['password']);
          }
          login = { client, instanceId, user: ctx.username, password: ctx.password };
          ctx.accept();
        },
        () => ctx.reject(),
      );
    });
    client.on('ready', () => {
      this.logins.add(login!);
      client.on('session', (accept) => this.session(login!, accept()));
    });
    client.on('close', () => login && this.logins.delete(login));
  }

  private session(login: Login, session: ssh2.Session) {
    let pty: PseudoTtyInfo | null = null;
    let resize: ((cols: number, rows: number) => void) | null = null;
    session.on('pty', (accept, _reject, info) => {
      pty = info;
      accept?.();
    });
    session.on('window-change', (accept, _reject, info) => {
      resize?.(info.cols, info.rows);
      accept?.();
    });
    session.on('env', (accept) => accept?.());
    const run = (channel: ServerChannel, command: string[] | undefined) => {
      const line = this.deps.driver.shell!(login.instanceId, command);
      if (!line) {
        channel.stderr.write('实例已不在运行中\r\n');
        channel.exit(1);
        return channel.end();
      }
      if (pty) resize = runWithPty(channel, line, pty);
      else runWithPipes(channel, line);
    };
    session.on('shell', (accept) => run(accept(), undefined));
    session.on('exec', (accept, _reject, info) => run(accept(), ['/bin/bash', '-c', info.command]));
    session.on('subsystem', (accept, reject, info) => {
      if (info.name !== 'sftp') return reject();
      pty = null;
      run(accept(), [SFTP_SERVER]);
    });
  }

  /** Ends the logins whose machine stopped or whose password was reset. */
  private async recheck() {
    const running = new Set(this.deps.driver.runningIds());
    for (const l of [...this.logins]) {
      const still = running.has(l.instanceId) && (await this.deps.login([l.instanceId], l.user, l.password).catch(() => l.instanceId)) === l.instanceId;
      if (!still) {
        this.logins.delete(l);
        l.client.end();
      }
    }
  }

  private limited(ip: string): boolean {
    const f = this.failures.get(ip);
    if (!f) return false;
    if (Date.now() - f.since > FAIL_WINDOW_MS) {
      this.failures.delete(ip);
      return false;
    }
    return f.count >= MAX_FAILURES;
  }

  private failed(ip: string) {
    const f = this.failures.get(ip);
    if (f && Date.now() - f.since <= FAIL_WINDOW_MS) f.count++;
    else this.failures.set(ip, { count: 1, since: Date.now() });
    if (this.failures.get(ip)!.count === MAX_FAILURES) this.deps.log(`SSH 网关：${ip} 密码错误次数过多，${FAIL_WINDOW_MS / 60_000} 分钟内拒绝登录`);
  }
}

/** A shell or command on a pty (what `ssh host` and `ssh -t host cmd` ask for); returns how to resize it. */
function runWithPty(channel: ServerChannel, line: ShellCommand, info: PseudoTtyInfo) {
  const term = spawnPty(line.file, line.args, { name: info.term || 'xterm-256color', cols: info.cols || 80, rows: info.rows || 24, env: line.env });
  term.onData((d) => channel.write(d));
  channel.on('data', (d: Buffer) => term.write(d.toString()));
  term.onExit(({ exitCode }) => {
    channel.exit(exitCode);
    channel.end();
  });
  channel.on('close', () => term.kill());
  return (cols: number, rows: number) => term.resize(cols, rows);
}

/** A command with plain pipes (`ssh host cmd`, scp, sftp): bytes in and out untouched. */
function runWithPipes(channel: ServerChannel, line: ShellCommand) {
  const child = spawnProcess(line.file, line.args, { env: line.env, stdio: ['pipe', 'pipe', 'pipe'] });
  channel.pipe(child.stdin);
  child.stdout.pipe(channel, { end: false });
  child.stderr.pipe(channel.stderr, { end: false });
  child.once('close', (code) => {
    channel.exit(code ?? 1);
    channel.end();
  });
  child.once('error', () => channel.end());
  channel.on('close', () => child.exitCode === null && child.kill('SIGKILL'));
}

/** The gateway's RSA host key, made once and kept (clients remember it). */
function hostKey(file: string): Buffer {
  if (!existsSync(file)) {
    const { privateKey } = generateKeyPairSync('rsa', {
      modulusLength: 2048,
      privateKeyEncoding: { type: 'pkcs1', format: 'pem' },
      publicKeyEncoding: { type: 'spki', format: 'pem' },
    });
    writeFileSync(file, privateKey, { mode: 0o600 });
  }
  return readFileSync(file);
}
