/**
 * The SSH gateway (`SSH_GATEWAY_PORT`): one SSH server for every instance whose driver gives shells.
 * A login is `ssh -p <port> root@<host>` with the machine password of the detail page (the password,
 * random per instance, says which machine), or a public key of 账号中心 (`root.<id prefix>@<host>`
 * says which machine; ssh-keys.ts). Inside, a shell or command runs in the instance's sandbox
 * (with a pty when the client asks for one), and the `sftp` subsystem is OpenSSH's sftp-server run
 * there too, so `sftp` and `scp` work. Wrong passwords are limited per address, counted in the
 * counters every replica shares (drivers/counters), so guesses spread over the replicas behind a load
 * balancer are not multiplied; a session ends when its machine stops or its password is reset.
 */
import { spawn as spawnProcess } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { spawn as spawnPty } from 'node-pty';
import ssh2, { type Connection, type PasswordAuthContext, type PseudoTtyInfo, type PublicKeyAuthContext, type ServerChannel } from 'ssh2';
import { SFTP_SERVER, type ComputeDriver, type ShellCommand } from '../../drivers/compute/types.js';
import { MemoryCounters, type CounterCheck, type Counters } from '../../drivers/counters/index.js';
import type { OfferedKey } from './ssh-keys.js';

/** Failed logins an address may make in `FAIL_WINDOW_MS` before it is refused outright. */
const MAX_FAILURES = 10;
const FAIL_WINDOW_MS = 10 * 60_000;
const RECHECK_MS = 3000;
/** A connection that has not logged in by then is dropped; logins being checked at once per address. */
const LOGIN_TIMEOUT_MS = 30_000;
const MAX_PENDING_PER_ADDRESS = 3;
/** Keys one connection may offer before it is refused outright (a client with many keys offers a few). */
const MAX_KEY_QUERIES = 10;

const METHODS: ('password' | 'publickey')[] = ['publickey', 'password'];

export interface SshGatewayDeps {
  driver: ComputeDriver;
  /** The machines running in the driver's reach (its runningIds): the ones a login may open. */
  runningIds(): string[];
  /** Which of these running instances the user name and password log into (InstanceService.sshLogin). */
  login(instanceIds: string[], user: string, password: string): Promise<string | null>;
  /** Which of them the user name and key log into (SshKeyService.login); with `signed`, the client's proof it holds the key. */
  keyLogin(instanceIds: string[], user: string, key: OfferedKey, signed?: { blob: Buffer; signature: Buffer; hashAlgo?: string }): Promise<string | null>;
  /** Where the host key is kept (created on first start). */
  hostKeyFile: string;
  /** The host key every replica shares (SSH_HOST_KEY); absent: hostKeyFile's, made once. */
  hostKeyPem?: string;
  log: (message: string) => void;
  /** Where wrong passwords are counted per address: every replica's (drivers/counters); this process's memory when absent (tests). */
  counters?: Pick<Counters, 'take' | 'add'>;
  /** The time the failure window is counted in, in ms (the console's clock); Date.now when absent. */
  now?: () => number;
}

interface Login {
  client: Connection;
  instanceId: string;
  user: string;
  /** What it logged in with, looked at again while it lasts. */
  proof: { password: string } | { key: OfferedKey };
}

export class SshGateway {
  private readonly server: ssh2.Server;
  private readonly failures: Pick<Counters, 'take' | 'add'>;
  private readonly now: () => number;
  /** Addresses whose refusal was logged, until when (one line per address and window, in this process). */
  private readonly told = new Map<string, number>();
  private unavailableToldAt = -Infinity;
  private readonly logins = new Set<Login>();
  /** Every connection, logged in or not (closing the gateway ends them all). */
  private readonly clients = new Set<Connection>();
  private readonly pending = new Map<string, number>();
  private timer: NodeJS.Timeout | null = null;
  private checking = false;

  constructor(private readonly deps: SshGatewayDeps) {
    this.failures = deps.counters ?? new MemoryCounters();
    this.now = deps.now ?? Date.now;
    this.server = new ssh2.Server({ hostKeys: [deps.hostKeyPem ? Buffer.from(deps.hostKeyPem) : hostKey(deps.hostKeyFile)] }, (client, info) =>
      this.accept(client, info.ip),
    );
    this.server.on('error', (e: Error) => deps.log(`SSH 网关出错：${e.message}`));
  }

  async listen(port: number, host: string): Promise<number> {
    await new Promise<void>((resolve, reject) => {
      const failed = (e: Error) => reject(e);
      this.server.once('error', failed);
      this.server.listen(port, host, () => {
        this.server.off('error', failed);
        resolve();
      });
    });
    this.timer = setInterval(() => void this.recheck(), RECHECK_MS);
    this.timer.unref();
    return (this.server.address() as AddressInfo).port;
  }

  async close(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    for (const c of this.clients) c.end();
    this.logins.clear();
    // Not awaited past a moment: a client that never answers must not hold the server's shutdown.
    await Promise.race([new Promise<void>((resolve) => this.server.close(() => resolve())), new Promise((r) => setTimeout(r, 1000).unref())]);
  }

  private accept(client: Connection, ip: string) {
    let login: Login | null = null;
    let queries = 0;
    this.clients.add(client);
    const timeout = setTimeout(() => !login && client.end(), LOGIN_TIMEOUT_MS);
    timeout.unref();
    client.on('error', () => {}); // a client that goes away mid-handshake is not the server's problem
    client.on('authentication', (ctx) => {
      if (ctx.method !== 'password' && ctx.method !== 'publickey') return ctx.reject(METHODS);
      if ((this.pending.get(ip) ?? 0) >= MAX_PENDING_PER_ADDRESS) return ctx.reject();
      // A client offering its keys one by one is not guessing; a password or a signature that fails is.
      const proving = ctx.method === 'password' || Boolean(ctx.signature);
      if (!proving && ++queries > MAX_KEY_QUERIES) return ctx.reject(['password']);
      this.pending.set(ip, (this.pending.get(ip) ?? 0) + 1);
      const done = () => {
        const left = (this.pending.get(ip) ?? 1) - 1;
        if (left) this.pending.set(ip, left);
        else this.pending.delete(ip);
      };
      // Counted as a failure until it succeeds (the same call that looks at the count): parallel
      // guesses, on this replica or others, cannot slip past the limit.
      const countedAt = this.now();
      void this.admit(ip, proving, countedAt).then((admitted) => {
        if (!admitted) {
          done();
          return ctx.reject();
        }
        this.attempt(ctx, ip, proving, countedAt, (instanceId) => (login = { client, instanceId, user: ctx.username, proof: proofOf(ctx) })).finally(done);
      });
    });
    client.on('ready', () => {
      this.logins.add(login!);
      client.on('session', (accept) => this.session(login!, accept()));
    });
    client.on('close', () => {
      clearTimeout(timeout);
      this.clients.delete(client);
      if (login) this.logins.delete(login);
    });
  }

  /** Checks the login against the machines; `loggedIn` is told of a proven one before it is accepted. */
  private attempt(ctx: PasswordOrKey, ip: string, proving: boolean, countedAt: number, loggedIn: (instanceId: string) => void): Promise<void> {
    const running = this.deps.runningIds();
    const attempt =
      ctx.method === 'password'
        ? this.deps.login(running, ctx.username, ctx.password)
        : this.deps.keyLogin(running, ctx.username, ctx.key, ctx.signature ? { blob: ctx.blob!, signature: ctx.signature, hashAlgo: ctx.hashAlgo } : undefined);
    return attempt.then(
      async (instanceId) => {
        if (!instanceId) return ctx.reject(METHODS);
        // A key without its signature yet: the client may go on and sign with it.
        if (!proving) return ctx.accept();
        await this.succeeded(ip, countedAt);
        loggedIn(instanceId);
        ctx.accept();
      },
      () => ctx.reject(),
    );
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
      // An image without sftp-server: said on the channel's error output (sftp and scp print it) instead of a bare "Connection closed".
      const missing = this.deps.driver.serviceMissing?.(login.instanceId, 'sftp');
      if (missing) return refuse(accept(), missing);
      run(accept(), [SFTP_SERVER]);
    });
  }

  /** Ends the logins whose machine stopped, whose password was reset, or whose key was deleted or lost its right. */
  private async recheck() {
    if (this.checking) return;
    this.checking = true;
    try {
      const running = new Set(this.deps.runningIds());
      for (const l of [...this.logins]) {
        const again =
          'password' in l.proof ? this.deps.login([l.instanceId], l.user, l.proof.password) : this.deps.keyLogin([l.instanceId], l.user, l.proof.key);
        const still = running.has(l.instanceId) && (await again.catch(() => l.instanceId)) === l.instanceId;
        if (!still) {
          this.logins.delete(l);
          l.client.end();
        }
      }
      const now = this.now();
      for (const [ip, until] of this.told) if (until <= now) this.told.delete(ip);
    } finally {
      this.checking = false;
    }
  }

  /**
   * Whether the address may try now: a proof (a password, a signed key) is counted as a failure in
   * the same call, a key offered without its signature is only looked at. Counters that cannot be
   * reached refuse the login: an attacker must not get unlimited guesses while they are away.
   */
  private async admit(ip: string, proving: boolean, at: number): Promise<boolean> {
    const check: CounterCheck = { key: failuresKey(ip), limit: MAX_FAILURES, amount: proving ? 1 : 0, windowMs: FAIL_WINDOW_MS };
    try {
      const taken = await this.failures.take([check], at);
      if (!taken.ok) this.tellLimited(ip, at);
      return taken.ok;
    } catch (e) {
      this.tellUnavailable(ip, e, at);
      return false;
    }
  }

  /** The guess counted by `admit` was right after all: taken back in the second it was counted in. */
  private async succeeded(ip: string, countedAt: number) {
    await this.failures.add(failuresKey(ip), -1, FAIL_WINDOW_MS, countedAt).catch((e: unknown) => this.tellUnavailable(ip, e, countedAt));
  }

  private tellLimited(ip: string, at: number) {
    if ((this.told.get(ip) ?? -Infinity) > at) return;
    this.told.set(ip, at + FAIL_WINDOW_MS);
    this.deps.log(`SSH 网关：${ip} 密码错误次数过多（${FAIL_WINDOW_MS / 60_000} 分钟内 ${MAX_FAILURES} 次），暂时拒绝登录`);
  }

  /** Once a minute at most: every login is refused meanwhile, one line says why. */
  private tellUnavailable(ip: string, e: unknown, at: number) {
    if (at - this.unavailableToldAt < 60_000) return;
    this.unavailableToldAt = at;
    this.deps.log(`SSH 网关：无法核对密码错误次数（限流计数不可用：${(e as Error).message}），已拒绝 ${ip} 等地址的登录，恢复后自动放行`);
  }
}

type PasswordOrKey = PasswordAuthContext | PublicKeyAuthContext;

/** What a proven login logged in with, looked at again while it lasts. */
function proofOf(ctx: PasswordOrKey): Login['proof'] {
  return ctx.method === 'password' ? { password: ctx.password } : { key: ctx.key };
}

/** The shared counter of an address's wrong passwords (and failed key signatures). */
function failuresKey(ip: string): string {
  return `ssh-fail:${ip}`;
}

/** Ends a channel with a reason the client shows, as a failed command would. */
function refuse(channel: ServerChannel, why: string) {
  channel.stderr.write(`${why}\r\n`);
  channel.exit(1);
  channel.end();
}

/** A shell or command on a pty (what `ssh host` and `ssh -t host cmd` ask for); returns how to resize it. */
function runWithPty(channel: ServerChannel, line: ShellCommand, info: PseudoTtyInfo) {
  const term = spawnPty(line.file, line.args, { name: info.term || 'xterm-256color', cols: info.cols || 80, rows: info.rows || 24, env: line.env });
  let exited = false;
  term.onData((d) => {
    if (!channel.write(d)) {
      term.pause();
      channel.once('drain', () => term.resume());
    }
  });
  channel.on('data', (d: Buffer) => {
    try {
      term.write(d as unknown as string); // node-pty writes a Buffer as is: a character split between packets stays whole
    } catch {
      /* ended */
    }
  });
  term.onExit(({ exitCode }) => {
    exited = true;
    channel.exit(exitCode);
    channel.end();
  });
  // Hanging up the pty ends the shell inside; an exited pty's pid is never signalled.
  channel.on('close', () => !exited && (term as typeof term & { destroy(): void }).destroy());
  return (cols: number, rows: number) => term.resize(cols, rows);
}

/** A command with plain pipes (`ssh host cmd`, scp, sftp): bytes in and out untouched. */
function runWithPipes(channel: ServerChannel, line: ShellCommand) {
  // Its own process group: nsenter forks the command, and the whole group is ended with the channel.
  const child = spawnProcess(line.file, line.args, { env: line.env, stdio: ['pipe', 'pipe', 'pipe'], detached: true });
  for (const stream of [child.stdin, child.stdout, child.stderr]) stream.on('error', () => {}); // EPIPE when the command ends first
  channel.pipe(child.stdin);
  child.stdout.pipe(channel, { end: false });
  child.stderr.pipe(channel.stderr, { end: false });
  child.once('close', (code) => {
    channel.exit(code ?? 1);
    channel.end();
  });
  child.once('error', () => channel.end());
  channel.on('close', () => {
    if (child.exitCode === null && child.signalCode === null && child.pid) {
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        /* gone */
      }
    }
    child.stdout.destroy();
    child.stderr.destroy();
  });
}

/** The gateway's RSA host key, made once and kept (clients remember it). */
function hostKey(file: string): Buffer {
  if (!existsSync(file)) {
    const { privateKey } = generateKeyPairSync('rsa', {
      modulusLength: 2048,
      privateKeyEncoding: { type: 'pkcs1', format: 'pem' },
      publicKeyEncoding: { type: 'spki', format: 'pem' },
    });
    // DATA_DIR need not exist yet on PostgreSQL (nothing else writes there before the gateway starts).
    mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
    writeFileSync(file, privateKey, { mode: 0o600 });
  }
  return readFileSync(file);
}
