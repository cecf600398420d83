/**
 * The operator's image registry (REGISTRY_URL: Harbor, Aliyun ACR, a CNCF distribution server),
 * through Debian's `skopeo`: `pull` copies an image into this host's layout, `push` sends one there
 * (a saved image, so that another host of the console can pull it), `exists` checks a manifest is
 * there (the operator's registered images are checked before they are offered).
 *
 * Credentials never reach a command line (`ps` shows those to every user of the host): skopeo reads
 * them from an auth file of mode 0600 in a private temporary folder, removed after each command.
 * Digests are kept as they are (`--preserve-digests`): an image is the same by digest on every host.
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { keepTail } from '../bounded-text.js';
import { checkRef, type OciImageInfo, type OciLayout } from './layout.js';

export interface RegistryOptions {
  /** http(s)://host[:port][/project]; http:// talks plain HTTP (a registry on a private network), https:// verifies TLS. */
  url: string;
  user?: string;
  password?: string;
  skopeo?: string;
}

export class OperatorRegistry {
  private readonly host: string;
  private readonly prefix: string;
  private readonly plainHttp: boolean;

  constructor(
    private readonly layout: OciLayout,
    private readonly opts: RegistryOptions,
  ) {
    const url = new URL(opts.url);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error(`REGISTRY_URL 应为 http(s):// 地址：${opts.url}`);
    this.host = url.host;
    this.prefix = url.pathname.replace(/^\/+|\/+$/g, '');
    this.plainHttp = url.protocol === 'http:';
  }

  /** Where `ref` ('console/base:12') is in the registry, as skopeo names it. */
  remote(ref: string): string {
    checkRef(ref);
    return `docker://${this.host}/${this.prefix ? `${this.prefix}/` : ''}${ref}`;
  }

  /** Copies `ref` from the registry into the layout under the same name; blobs the host has are not downloaded again. */
  async pull(ref: string): Promise<OciImageInfo> {
    const into = await mkdtemp(path.join(this.layout.dir, '.pull-'));
    try {
      await this.layout.lendBlobs(into);
      await this.skopeo(['copy', '--preserve-digests', ...this.tls('src'), this.remote(ref), `oci:${into}:${ref}`], ref);
      return await this.layout.adopt(into, ref);
    } finally {
      await rm(into, { recursive: true, force: true });
    }
  }

  /** Sends the layout's image `ref` to the registry under the same name; its manifest digest. */
  async push(ref: string): Promise<string> {
    const from = await mkdtemp(path.join(this.layout.dir, '.push-'));
    try {
      const image = await this.layout.exportImage(ref, from);
      await this.skopeo(['copy', '--preserve-digests', ...this.tls('dest'), `oci:${from}:${ref}`, this.remote(ref)], ref);
      return image.digest;
    } finally {
      await rm(from, { recursive: true, force: true });
    }
  }

  /**
   * Sends the layout's image `local` (a name or a digest) to the registry as `remoteName`, which may
   * pin a digest (`console/base@sha256:…`: a saved image's base, whatever its tag names there).
   */
  async pushAs(local: string, remoteName: string): Promise<string> {
    const from = await mkdtemp(path.join(this.layout.dir, '.push-'));
    try {
      const image = await this.layout.exportImage(local, from, 'export:1');
      await this.skopeo(['copy', '--preserve-digests', ...this.tls('dest'), `oci:${from}:export:1`, this.remote(remoteName)], remoteName);
      return image.digest;
    } finally {
      await rm(from, { recursive: true, force: true });
    }
  }

  /**
   * Deletes `ref`'s manifest from the registry (its blobs go at the registry's own garbage
   * collection): true once gone; false where there was none, or the registry does not allow deletes
   * (a distribution server without storage.delete.enabled answers 405 unsupported).
   */
  async remove(ref: string): Promise<boolean> {
    try {
      await this.skopeo(['delete', ...this.tls(''), this.remote(ref)], ref);
      return true;
    } catch (e) {
      if (e instanceof RegistryError && (e.kind === 'missing' || /unsupported|405|not allowed/i.test(e.message))) return false;
      throw e;
    }
  }

  /** Whether the registry has a manifest for `ref`; a registry that cannot be reached or refuses the login is an error, not a no. */
  async exists(ref: string): Promise<boolean> {
    return (await this.digestOf(ref)) !== null;
  }

  /** The digest of `ref`'s manifest (as the registry serves it: a multi-platform image's index); null where there is none. */
  async digestOf(ref: string): Promise<string | null> {
    try {
      const raw = await this.skopeo(['inspect', '--raw', ...this.tls(''), this.remote(ref)], ref, true);
      return `sha256:${createHash('sha256').update(raw).digest('hex')}`;
    } catch (e) {
      if (e instanceof RegistryError && e.kind === 'missing') return null;
      throw e;
    }
  }

  /**
   * The name of an image the operator wrote (`registry.example.com/ns/name:tag` or `ns/name:tag`)
   * inside this registry (`ns/name:tag`): REGISTRY_URL's host and path taken off. A reference that
   * names another registry is refused (kind 'foreign'): the console's login is for this one only.
   */
  nameOf(reference: string): string {
    const first = reference.split('/')[0]!;
    const namesHost = reference.includes('/') && (first.includes('.') || first.includes(':') || first === 'localhost');
    if (!namesHost) return reference;
    const here = `${this.host}/${this.prefix ? `${this.prefix}/` : ''}`;
    if (!reference.startsWith(here)) throw new RegistryError('foreign', `${reference} 不在镜像仓库 ${this.opts.url} 中`);
    return reference.slice(here.length);
  }

  private tls(side: 'src' | 'dest' | ''): string[] {
    return this.plainHttp ? [`--${side ? `${side}-` : ''}tls-verify=false`] : [];
  }

  /** Runs skopeo with the credentials in a private auth file; a failure as a RegistryError saying what went wrong; its output where asked. */
  private async skopeo(args: string[], ref: string, output = false): Promise<Buffer> {
    const home = await mkdtemp(path.join(os.tmpdir(), 'registry-'));
    try {
      const auth = path.join(home, 'auth.json');
      await writeFile(auth, JSON.stringify(this.authFile()), { mode: 0o600 });
      const [command, ...rest] = args;
      // Signatures are not checked: the registry is the operator's own, reached as configured (TLS, login).
      const line = ['--insecure-policy', command!, '--authfile', auth, ...rest];
      const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home, TMPDIR: home };
      const { code, stderr, stdout } = await runSkopeo(this.opts.skopeo ?? 'skopeo', line, env, output);
      if (code !== 0) throw registryError(stderr, ref, this.opts.url);
      return stdout;
    } finally {
      await rm(home, { recursive: true, force: true });
    }
  }

  private authFile(): { auths: Record<string, { auth: string }> } {
    if (!this.opts.user && !this.opts.password) return { auths: {} };
    const auth = Buffer.from(`${this.opts.user ?? ''}:${this.opts.password ?? ''}`).toString('base64');
    return { auths: { [this.host]: { auth } } };
  }
}

export class RegistryError extends Error {
  constructor(
    readonly kind: 'missing' | 'unauthorized' | 'unreachable' | 'foreign' | 'failed',
    message: string,
  ) {
    super(message);
  }
}

/** skopeo's error output, told as what the operator should check (the credentials never appear in it). */
export function registryError(stderr: string, ref: string, url: string): RegistryError {
  const tail = stderr.trim().slice(-400);
  // A refused login first: read as "no such image" it would quietly hide the operator's images.
  if (/unauthorized|authentication required|invalid username\/password|denied/i.test(stderr)) {
    return new RegistryError('unauthorized', `镜像仓库 ${url} 拒绝了登录，请检查 REGISTRY_USER / REGISTRY_PASSWORD（${tail}）`);
  }
  if (/manifest unknown|name unknown|not found|does not exist/i.test(stderr)) return new RegistryError('missing', `镜像仓库中没有 ${ref}`);
  if (/connection refused|no such host|i\/o timeout|network is unreachable|dial tcp|server gave HTTP response to HTTPS client|certificate/i.test(stderr)) {
    return new RegistryError('unreachable', `无法连接镜像仓库 ${url}（${tail}）`);
  }
  return new RegistryError('failed', `镜像仓库操作失败（${ref}）：${tail || '无输出'}`);
}

/** A manifest is small; more than this on skopeo's output is not one. */
const MAX_OUTPUT = 4 * 1024 ** 2;

function runSkopeo(
  file: string,
  args: string[],
  env: Record<string, string>,
  output: boolean,
): Promise<{ code: number | null; stderr: string; stdout: Buffer }> {
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, { stdio: ['ignore', output ? 'pipe' : 'ignore', 'pipe'], env });
    const stderr = keepTail(child.stderr);
    const chunks: Buffer[] = [];
    let size = 0;
    child.stdout?.on('data', (c: Buffer) => {
      size += c.length;
      if (size <= MAX_OUTPUT) chunks.push(c);
    });
    child.once('error', (e) =>
      reject(new RegistryError('failed', `无法运行 skopeo（${(e as NodeJS.ErrnoException).code ?? e.message}）：安装 Debian 软件包 skopeo`)),
    );
    child.once('close', (code) => resolve({ code, stderr: stderr.toString(), stdout: Buffer.concat(chunks) }));
  });
}
