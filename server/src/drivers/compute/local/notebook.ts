/**
 * The notebook inside local machines. A machine runs its image's /usr (or the host's, for an image
 * without an OCI reference), so it has the notebook where that /usr's python3 has the `notebook`
 * module: Debian's python3-notebook (which
 * ships no `jupyter-notebook` command; Debian's jupyter-notebook package adds one), or a notebook
 * installed with pip under /usr/local. It is started as `python3 -m notebook`, with the options of
 * the version found: notebook 6 is its own server (`--NotebookApp.*`), notebook 7 an application of
 * jupyter_server (`--ServerApp.*`, the token on `--IdentityProvider.token`). Both serve `/tree`,
 * `/api/*` and the kernels' WebSockets under the base URL the console's proxy (access/machine-proxy)
 * forwards to.
 */
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { execIn, inRoot, PYTHON, type Joinable } from './sandbox.js';

/** The notebook the host's python3 runs: its version, and the options it takes (see notebookArgs). */
export interface HostNotebook {
  version: string;
  /** 6: notebook's own server; 7 and later: jupyter_server's. */
  major: number;
}

/** Where the notebook listens inside the sandbox (serviceSocket reaches it there). */
export const NOTEBOOK_SOCKET = '/run/jupyter.sock';

/** Notebook 6.1 added listening on a Unix socket, the only way the console reaches it. */
const OLDEST = [6, 1];

let found: HostNotebook | null | undefined;

/**
 * The host's notebook, asked once per process (`python3 -m notebook --version`, the way machines
 * start it, with as bare an environment as theirs); null where the module is missing, broken or
 * older than 6.1: no machine offers Jupyter then.
 */
export function hostNotebook(): HostNotebook | null {
  found ??= notebookOf(
    spawnSync(PYTHON, ['-m', 'notebook', '--version'], {
      encoding: 'utf8',
      env: { PATH: '/usr/bin:/bin', LANG: 'C.UTF-8', HOME: '/nonexistent' },
      stdio: ['ignore', 'pipe', 'ignore'],
      timeout: 60_000,
    }),
  );
  return found;
}

const inImages = new Map<string, HostNotebook | null>();

/**
 * The notebook of an image's rootfs (machine-image.ts), without running anything of the image on the
 * host: the version its package's metadata folder (`notebook-6.4.12.egg-info`, `….dist-info`) names,
 * where its python3 is there too; null: no machine of that image offers Jupyter. Asked once per rootfs.
 */
export function imageNotebook(rootfs: string): HostNotebook | null {
  if (!inImages.has(rootfs)) inImages.set(rootfs, inRoot(rootfs, PYTHON) ? notebookInPackages(rootfs) : null);
  return inImages.get(rootfs)!;
}

function notebookInPackages(rootfs: string): HostNotebook | null {
  for (const dir of packageDirs(rootfs)) {
    for (const name of namesIn(dir)) {
      const m = /^notebook-(\d+\.\d+[^-]*?)\.(?:dist|egg)-info$/.exec(name);
      if (m) return notebookOf({ status: 0, stdout: m[1]! });
    }
  }
  return null;
}

/** Where Debian's packages and pip put Python modules, inside a rootfs. */
function packageDirs(rootfs: string): string[] {
  const out: string[] = [];
  for (const lib of ['/usr/lib', '/usr/local/lib']) {
    const at = inRoot(rootfs, lib);
    if (!at) continue;
    for (const py of namesIn(at).filter((n) => /^python3(?:\.\d+)?$/.test(n))) {
      for (const sub of ['dist-packages', 'site-packages']) {
        const dir = inRoot(rootfs, `${lib}/${py}/${sub}`);
        if (dir) out.push(dir);
      }
    }
  }
  return out;
}

function namesIn(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

/** What `--version` answered, as a notebook the console can start; null where it did not answer one. */
export function notebookOf(answer: { status: number | null; stdout: string | null }): HostNotebook | null {
  const version = answer.status === 0 ? answer.stdout?.trim().split('\n').pop()?.trim() : undefined;
  const m = version?.match(/^(\d+)\.(\d+)/);
  if (!version || !m) return null;
  const [major, minor] = [Number(m[1]), Number(m[2])];
  if (major < OLDEST[0]! || (major === OLDEST[0] && minor < OLDEST[1]!)) return null;
  return { version, major };
}

/** The notebook's command line inside the sandbox: base URL /jupyter/<id>/, the instance's token, on NOTEBOOK_SOCKET. */
export function notebookArgs(notebook: HostNotebook, instanceId: string, token: string): string[] {
  const app = notebook.major >= 7 ? 'ServerApp' : 'NotebookApp';
  return [
    PYTHON,
    '-m',
    'notebook',
    `--sock=${NOTEBOOK_SOCKET}`,
    `--${app}.base_url=/jupyter/${instanceId}/`,
    // jupyter_server 2 (what notebook 7 needs) takes the token from its identity provider.
    notebook.major >= 7 ? `--IdentityProvider.token=${token}` : `--NotebookApp.token=${token}`,
    ...(notebook.major >= 7 ? [] : ['--NotebookApp.password=']),
    `--${app}.quit_button=False`,
    // Reached only through the console's proxy, under the machine origin's host (`<id>.localhost`, `<id>.m.example.com`).
    `--${app}.allow_remote_access=True`,
    '--allow-root',
    '--no-browser',
    '--notebook-dir=/root',
  ];
}

/**
 * Starts the notebook server inside the sandbox (notebookArgs); it ends with the sandbox. Its first
 * answer comes a second or two later (the proxy answers 503 until then).
 */
export function startNotebook(sandbox: Joinable, notebook: HostNotebook, instanceId: string, token: string, log?: (m: string) => void): void {
  const child = execIn(sandbox, notebookArgs(notebook, instanceId, token), { stdio: 'ignore' });
  child.once('error', (e) => log?.(`local compute: 笔记本服务无法启动（${e.message}）`));
}
