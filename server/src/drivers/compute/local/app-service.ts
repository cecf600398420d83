/**
 * The image application of a local machine (镜像应用, issue 30 §3): an image plus the port it serves.
 * At every start of the machine the application's command — its image config's Cmd, with the image's
 * Env and WorkingDir — runs inside it as its root; its output goes to /var/log/app.log there (kept
 * under APP_LOG_BYTES, one older file beside it); when it ends it is started again, later each time
 * (backoff), until the machine stops.
 *
 * The console reaches the port through a relay: a small Node program in the machine's user and
 * network namespaces (not its mount or PID namespace: the machine cannot see or signal it, and it
 * runs the host's programs, whatever the image holds) that listens on a Unix socket of the console's
 * and connects each client to 127.0.0.1:<port> inside. Until the port answers, the relay closes the
 * connection, which the proxy shows as the 启动中 page.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import type { MachineApp, MachineAppState } from '../types.js';
import { SETPRIV } from './host-uids.js';
import { OciLayout } from './oci/layout.js';
import { execIn, imageEnvOf, joinAndExec, machineEnv, runIn, type Joinable } from './sandbox.js';

/** What an application machine runs: its image's start command and the port it serves. */
export interface AppCommand {
  cmd: string[];
  /** NAME=VALUE, as an image config's Env. */
  env: string[];
  workingDir: string;
  port: number;
}

/** The part of an image's config the application needs (oci/layout.ts's OciImageConfigLite). */
export interface AppImageConfig {
  env: string[];
  cmd: string[];
  workingDir: string;
  exposedPorts: number[];
}

/** Where an image's config is read: the driver's OCI layout (resolve by ref or manifest digest). */
export interface AppImages {
  resolve(refOrDigest: string): Promise<{ config: AppImageConfig } | null>;
}

/** The machine's log of its application, inside it. */
export const APP_LOG = '/var/log/app.log';
/** The log's bound: past it (within a second), the log becomes app.log.1 (the one before is dropped) and starts again. */
export const APP_LOG_BYTES = 1024 ** 2;
/** What the 启动中 page shows of the log: its last lines, a few KB at most. */
const TAIL_LINES = 40;
const TAIL_BYTES = 3000;
/** The longest wait before the next try, and how long a try must have run for the wait to start small again. */
const MAX_BACKOFF_MS = 30_000;
const STEADY_MS = 30_000;

/**
 * The command of an application machine: its image's Cmd, Env and WorkingDir, serving `appPort`
 * (the catalogue application's) or else the first port the image exposes (an application image
 * says which it serves; a system image exposes none); null for a machine whose image has no
 * command or serves no port, or that runs on the host's own system.
 */
export async function appCommandOf(
  spec: { appPort: number | null; imageRef?: string | null; imageDigest?: string | null },
  images: AppImages | null,
): Promise<AppCommand | null> {
  // The digest the machine was laid out on: a re-tagged reference never changes what it runs.
  const ref = spec.imageDigest ?? spec.imageRef;
  if (!ref || !images) return null;
  const image = await images.resolve(ref);
  const port = spec.appPort ?? image?.config.exposedPorts[0];
  if (!image?.config.cmd.length || !port) return null;
  const { cmd, env, workingDir } = image.config;
  return { cmd, env, workingDir: workingDir || '/', port };
}

/**
 * The environment an application's command is given (NAME=VALUE, exported by RUN_APP after the
 * machine's own): its image's Env, and with cards LD_LIBRARY_PATH and PATH ending in the host
 * driver's folders (gpus.ts gpuEnv), so that the image's own value neither hides the driver's
 * libcuda nor is lost.
 */
export function appEnv(imageEnv: readonly string[], cards: boolean): string[] {
  return Object.entries(machineEnv(imageEnvOf(imageEnv), cards) ?? {}).map(([k, v]) => `${k}=${v}`);
}

/** The driver's image layout (`<dir>/oci`, opened by machine-image.ts), where it exists: no layout, no OCI images, no applications. */
export function layoutImages(dir: string): AppImages {
  const layoutDir = path.join(dir, 'oci');
  let opened: Promise<OciLayout> | null = null;
  return {
    async resolve(ref) {
      if (!existsSync(path.join(layoutDir, 'index.json'))) return null;
      opened ??= OciLayout.open(layoutDir);
      return (await opened).resolve(ref);
    },
  };
}

/**
 * Inside the machine, as its root: into the image's WorkingDir with its Env, then the command, its
 * output (and why it ended) appended to the log as it comes (`cat`: unbuffered, `tail -f` shows
 * it live). A watcher beside it copies the log to app.log.1 and empties it once it passes the bound
 * (checked each second; the writer appends, so it goes on at the new end). `$1`: the working folder;
 * NAME=VALUE words up to `--`; then the command. POSIX sh and coreutils only (cat, stat, sleep).
 */
const RUN_APP = `cd "$1" 2>/dev/null || cd /; shift
while [ "$1" != -- ]; do export "$1"; shift; done; shift
log=${APP_LOG}; max=${APP_LOG_BYTES}
mkdir -p /var/log
{ echo "==== 启动镜像应用：$*"; "$@" </dev/null 2>&1; echo "==== 镜像应用已退出（退出码 $?）"; } | {
  (while sleep 1; do
    [ "$(stat -c %s "$log" 2>/dev/null || echo 0)" -lt "$max" ] || { cat "$log" > "$log.1"; : > "$log"; }
  done) </dev/null >/dev/null 2>&1 &
  cat >> "$log"
  kill $! 2>/dev/null
}`;

/**
 * The relay (Node, CommonJS, given the port and the socket's path): each connection to the socket is
 * joined to the port on the loopback (IPv4, then IPv6); none there, the connection is closed. It
 * ends when its standard input does: with the console, whatever happens to it.
 */
const RELAY = `
const net = require('net'), fs = require('fs');
const [port, sock] = process.argv.slice(1);
function upstream(c, hosts) {
  const u = net.connect({ port: Number(port), host: hosts[0], allowHalfOpen: true });
  let joined = false;
  u.once('connect', () => { joined = true; c.pipe(u); u.pipe(c); c.resume(); });
  u.on('error', () => (!joined && hosts.length > 1 ? upstream(c, hosts.slice(1)) : c.destroy()));
  c.once('close', () => u.destroy());
}
const server = net.createServer({ allowHalfOpen: true, pauseOnConnect: true }, (c) => {
  c.on('error', () => c.destroy());
  upstream(c, ['127.0.0.1', '::1']);
});
try { fs.unlinkSync(sock); } catch {}
server.listen(sock, () => { fs.chmodSync(sock, 0o600); process.stdout.write('ready\\n'); });
process.stdin.on('end', () => process.exit(0)).resume();
`;

interface RunningApp {
  sandbox: Joinable;
  command: AppCommand;
  relay: ChildProcess;
  socketPath: string;
  /** The current try, while it runs. */
  child: ChildProcess | null;
  exits: number;
  startedAt: number;
  backoffMs: number;
  timer: NodeJS.Timeout | null;
}

export interface AppServiceOptions {
  /** Where the relays' sockets live (a folder per machine, its uid's alone). */
  dir: string;
  log?: (message: string) => void;
  /** The first wait before a try again (doubled each time, up to MAX_BACKOFF_MS). */
  backoffMs?: number;
}

/** The applications of the running machines of one driver. */
export class AppService {
  private readonly apps = new Map<string, RunningApp>();

  constructor(private readonly opts: AppServiceOptions) {}

  /** Starts the machine's application and its relay (once the relay listens); a running one is stopped first. */
  async start(instanceId: string, sandbox: Joinable, command: AppCommand): Promise<void> {
    this.stop(instanceId);
    const socketPath = this.socketFolder(instanceId, sandbox.hostUid ?? null);
    const relay = await startRelay(sandbox, command.port, socketPath);
    const app: RunningApp = { sandbox, command, relay, socketPath, child: null, exits: 0, startedAt: Date.now(), backoffMs: this.firstBackoff, timer: null };
    relay.once('exit', () => {
      if (this.apps.get(instanceId) === app) this.opts.log?.(`local compute: 镜像应用转发已退出（${instanceId}）`);
    });
    this.apps.set(instanceId, app);
    this.run(instanceId, app);
  }

  /**
   * Starts the application of a machine that is one (appCommandOf), with the host driver's folders
   * after its image's own where the machine runs with `cards`. A failure is logged and is not the
   * machine's: it runs without its application (打开应用 then says it has none).
   */
  async startIfApp(
    instanceId: string,
    sandbox: Joinable,
    spec: Parameters<typeof appCommandOf>[0],
    images: AppImages | null,
    { cards }: { cards: boolean } = { cards: false },
  ): Promise<void> {
    try {
      const command = await appCommandOf(spec, images);
      if (command) await this.start(instanceId, sandbox, { ...command, env: appEnv(command.env, cards) });
    } catch (e) {
      this.opts.log?.(`local compute: 镜像应用无法启动（${instanceId}）：${(e as Error).message}`);
    }
  }

  /** The application of a machine that runs one, for the console's proxy. */
  appOf(instanceId: string): MachineApp | null {
    if (!this.apps.has(instanceId)) return null;
    return { socket: () => this.socketOf(instanceId), state: () => this.state(instanceId) };
  }

  /** Ends every application (the server stops). */
  stopAll(): void {
    for (const id of [...this.apps.keys()]) this.stop(id);
  }

  /** Ends the machine's application (it is not started again) and its relay. */
  stop(instanceId: string): void {
    const app = this.apps.get(instanceId);
    if (!app) return;
    this.apps.delete(instanceId);
    if (app.timer) clearTimeout(app.timer);
    app.child?.kill('SIGKILL');
    app.relay.kill('SIGKILL');
    rmSync(path.dirname(app.socketPath), { recursive: true, force: true });
  }

  /** The relay's socket to the application's port; null when the machine runs no application. */
  socketOf(instanceId: string): { path: string; close(): void } | null {
    const app = this.apps.get(instanceId);
    return app && existsSync(app.socketPath) ? { path: app.socketPath, close: () => {} } : null;
  }

  /** How the application is doing, with the end of its log; null when the machine runs none. */
  async state(instanceId: string): Promise<MachineAppState | null> {
    const app = this.apps.get(instanceId);
    if (!app) return null;
    // The older file first: just after the log was emptied, its end is there.
    const lastLines = `cat ${APP_LOG}.1 ${APP_LOG} 2>/dev/null | tail -n ${TAIL_LINES} | tail -c ${TAIL_BYTES}`;
    const tail = await runIn(app.sandbox, ['/bin/sh', '-c', lastLines]).catch(() => null);
    return {
      port: app.command.port,
      exits: app.exits,
      running: app.child !== null,
      upSeconds: Math.floor((Date.now() - app.startedAt) / 1000),
      // A character cut at the start by `tail -c` is dropped.
      logTail: tail?.code === 0 ? tail.stdout.replace(/^\uFFFD+/, '') : '',
    };
  }

  private get firstBackoff(): number {
    return this.opts.backoffMs ?? 1000;
  }

  /** One try of the command; when it ends, the next after the backoff (which grows while tries end soon). */
  private run(instanceId: string, app: RunningApp) {
    const { cmd, env, workingDir } = app.command;
    app.startedAt = Date.now();
    const child = execIn(app.sandbox, ['/bin/sh', '-c', RUN_APP, 'app', workingDir, ...env.filter((e) => /^[A-Za-z_][A-Za-z0-9_]*=/.test(e)), '--', ...cmd], {
      stdio: 'ignore',
    });
    app.child = child;
    child.once('error', (e) => this.opts.log?.(`local compute: 镜像应用无法启动（${instanceId}：${e.message}）`));
    child.once('exit', () => {
      if (this.apps.get(instanceId) !== app || app.child !== child) return; // stopped on purpose
      app.child = null;
      app.exits++;
      const ranMs = Date.now() - app.startedAt;
      if (ranMs >= STEADY_MS) app.backoffMs = this.firstBackoff;
      const wait = app.backoffMs;
      app.backoffMs = Math.min(MAX_BACKOFF_MS, app.backoffMs * 2);
      app.timer = setTimeout(() => {
        app.timer = null;
        if (this.apps.get(instanceId) === app) this.run(instanceId, app);
      }, wait);
    });
  }

  /** A fresh folder for the machine's relay socket, walkable only by the machine's uid (and the console); the socket's path. */
  private socketFolder(instanceId: string, uid: number | null): string {
    const top = path.join(this.opts.dir, 'apps');
    mkdirSync(top, { recursive: true, mode: 0o711 });
    chmodSync(top, 0o711);
    const folder = path.join(top, instanceId);
    rmSync(folder, { recursive: true, force: true });
    mkdirSync(folder, { mode: 0o700 });
    if (uid !== null) chownSync(folder, uid, uid);
    return path.join(folder, 's');
  }
}

/** How long the relay may take to listen (Node's start). */
const RELAY_START_MS = 15_000;

/**
 * Starts the relay in the machine's user and network namespaces, as its root with no capability
 * left; resolves once it listens.
 */
function startRelay(sandbox: Joinable, port: number, socketPath: string): Promise<ChildProcess> {
  const line = joinAndExec(
    [],
    [
      'nsenter',
      '--target',
      String(sandbox.initPid),
      ...(sandbox.hostUid == null ? ['--preserve-credentials'] : []),
      '--user',
      '--net',
      '--',
      SETPRIV,
      '--bounding-set',
      '-all',
      '--inh-caps',
      '-all',
      '--no-new-privs',
      '--',
      process.execPath,
      '-e',
      RELAY,
      String(port),
      socketPath,
    ],
  );
  const relay = spawn(line.file, line.args, { stdio: ['pipe', 'pipe', 'pipe'], env: line.env, cwd: '/' });
  return new Promise((resolve, reject) => {
    let said = '';
    const timer = setTimeout(() => fail(new Error('镜像应用转发启动超时')), RELAY_START_MS);
    const fail = (e: Error) => {
      clearTimeout(timer);
      relay.kill('SIGKILL');
      reject(e);
    };
    relay.stderr!.on('data', (c: Buffer) => (said = (said + c.toString()).slice(-500)));
    const exited = (code: number | null) => fail(new Error(`镜像应用转发无法启动（退出码 ${code}）：${said.trim() || '无输出'}`));
    relay.once('error', fail);
    relay.once('exit', exited);
    relay.stdout!.once('data', () => {
      clearTimeout(timer);
      relay.off('exit', exited);
      // Read to the end and dropped from now on: nothing the machine sends reaches it there anyway.
      relay.stdout!.resume();
      relay.stderr!.resume();
      resolve(relay);
    });
  });
}
