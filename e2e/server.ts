/**
 * Starts the real server (`npm start`'s entry, without the build step) on a free port with a fresh
 * embedded database, and stops it afterwards. The built console must exist (npm run build).
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

export interface RunningServer {
  url: string;
  /** The server's DATA_DIR (its database, files and local instances' disks). */
  dataDir: string;
  logs: string[];
  stop(): Promise<void>;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as { port: number }).port;
      srv.close(() => resolve(port));
    });
    srv.on('error', reject);
  });
}

/** The OCI layout of the local driver in a DATA_DIR (drivers/compute/local: `<DATA_DIR>/local-compute/oci`). */
export function ociLayoutOf(dataDir: string): string {
  return path.join(dataDir, 'local-compute', 'oci');
}

/**
 * Gives a fresh DATA_DIR the images of `imagesFrom` (a DATA_DIR-shaped cache that `npm run images` filled) without
 * ever writing to it: the blobs are hard links (content-addressed; the layout only renames new files in and unlinks
 * old ones, so the cache's files are never changed), index.json and oci-layout copies (the server rewrites index.json).
 */
function seedImages(dataDir: string, imagesFrom: string): void {
  const from = ociLayoutOf(imagesFrom);
  if (!existsSync(path.join(from, 'index.json'))) throw new Error(`no images in ${from}: run \`DATA_DIR=${imagesFrom} npm run images\` first`);
  const to = ociLayoutOf(dataDir);
  mkdirSync(to, { recursive: true, mode: 0o700 });
  execFileSync('cp', ['-al', path.join(from, 'blobs'), to]);
  for (const file of ['index.json', 'oci-layout']) copyFileSync(path.join(from, file), path.join(to, file));
}

export interface StartOptions {
  /** A DATA_DIR-shaped images cache whose local-compute/oci layout the server's DATA_DIR starts with (see seedImages). */
  imagesFrom?: string;
}

export async function startServer(env: Record<string, string> = {}, options: StartOptions = {}): Promise<RunningServer> {
  if (!existsSync(path.join(root, 'web', 'dist', 'index.html'))) throw new Error('web/dist is missing: run `npm run build` first');
  const port = await freePort();
  const dataDir = mkdtempSync(path.join(tmpdir(), 'console-e2e-'));
  // Walkable by the machines' own uids (as root, a machine runs as one: drivers/compute/local/host-uids.ts).
  chmodSync(dataDir, 0o711);
  if (options.imagesFrom) {
    try {
      seedImages(dataDir, options.imagesFrom);
    } catch (e) {
      rmSync(dataDir, { recursive: true, force: true });
      throw e;
    }
  }
  const logs: string[] = [];
  const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', 'server/src/main.ts'], {
    cwd: root,
    env: {
      ...process.env,
      PORT: String(port),
      HOST: '127.0.0.1',
      DEV_TOOLS: 'true',
      COMPUTE_DRIVER: 'simulated',
      DATA_DIR: dataDir,
      LOG_LEVEL: 'info',
      PUBLIC_BASE_URL: `http://127.0.0.1:${port}`,
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout!.on('data', (d) => logs.push(String(d)));
  child.stderr!.on('data', (d) => logs.push(String(d)));
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`server exited early:\n${logs.join('')}`);
    try {
      if ((await fetch(`${url}/healthz`)).ok) break;
    } catch {
      /* not listening yet */
    }
    if (Date.now() > deadline) throw new Error(`server did not become healthy:\n${logs.join('')}`);
    await new Promise((r) => setTimeout(r, 200));
  }
  return {
    url,
    dataDir,
    logs,
    async stop() {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await Promise.race([exited, new Promise((r) => setTimeout(r, 10_000))]);
      if (child.exitCode === null) child.kill('SIGKILL');
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
