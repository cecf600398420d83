/**
 * The operator's registry (registry.ts) against a real one: Debian's docker-registry (the CNCF
 * distribution server) on a loopback port with a login, started here. An image pushed, forgotten
 * here and pulled back is the same by digest, also into another host's layout; a missing image is
 * a no, a wrong password a clear error.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { skipOrFail } from '../../../../../test/host-packages.js';
import { buildTinyImage } from '../../../../../test/tiny-image.js';
import { keepTail } from '../bounded-text.js';
import { MachineImages } from '../machine-image.js';
import type { MachineSpec } from '../../types.js';
import { OciLayout } from './layout.js';
import { OperatorRegistry, registryError } from './registry.js';
import { ImageRegistrar } from './registration.js';

const REGISTRY = '/usr/bin/docker-registry';
const USER = 'console';
const PASSWORD = 'tiny-secret';
/** bcrypt (cost 4) of PASSWORD, the only hash the registry's htpasswd accepts; made once with Python's crypt. */
const HTPASSWD = `${USER}:$2b$04$ssXPELUigY4Kwr8EMkTLTebwXd5JoLIDnSxIQA76CcSFgLad1swVS\n`;

const missing = [
  ...(existsSync('/usr/bin/skopeo') ? [] : ['skopeo (no /usr/bin/skopeo)']),
  ...(existsSync(REGISTRY) ? [] : [`docker-registry (no ${REGISTRY})`]),
];

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const port = (server.address() as { port: number }).port;
      server.close(() => resolve(port));
    });
  });
}

/** The distribution server on a free loopback port, filesystem storage and an htpasswd login in `dir`. */
async function startRegistry(dir: string): Promise<{ url: string; child: ChildProcess }> {
  const port = await freePort();
  writeFileSync(path.join(dir, 'htpasswd'), HTPASSWD);
  const config = [
    'version: 0.1',
    'log:',
    '  level: error',
    '  accesslog:',
    '    disabled: true',
    'storage:',
    '  filesystem:',
    `    rootdirectory: ${path.join(dir, 'data')}`,
    'http:',
    `  addr: 127.0.0.1:${port}`,
    '  secret: registry-test-secret',
    'auth:',
    '  htpasswd:',
    '    realm: registry-test',
    `    path: ${path.join(dir, 'htpasswd')}`,
  ].join('\n');
  writeFileSync(path.join(dir, 'config.yml'), `${config}\n`);
  // Its log (every 404 a line) is kept for a failure to start only.
  const child = spawn(REGISTRY, ['serve', path.join(dir, 'config.yml')], { stdio: ['ignore', 'ignore', 'pipe'] });
  const log = keepTail(child.stderr);
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 100; i++) {
    const answered = await fetch(`${url}/v2/`).then(
      (r) => r.status,
      () => 0,
    );
    if (answered === 401) return { url, child };
    await new Promise((r) => setTimeout(r, 100));
  }
  child.kill();
  throw new Error(`docker-registry did not answer on its port: ${log.toString()}`);
}

describe.skipIf(skipOrFail(missing, process.env))('the operator’s registry (a real distribution server)', () => {
  const work = mkdtempSync(path.join(tmpdir(), 'oci-registry-test-'));
  let registry: { url: string; child: ChildProcess };
  let layout: OciLayout;
  let remote: OperatorRegistry;
  beforeAll(async () => {
    registry = await startRegistry(work);
    layout = await OciLayout.open(path.join(work, 'oci'));
    remote = new OperatorRegistry(layout, { url: registry.url, user: USER, password: PASSWORD });
  });
  afterAll(() => {
    registry?.child.kill();
    rmSync(work, { recursive: true, force: true });
  });

  it('pushes an image, pulls it back by the same digest, here and on another host', async () => {
    const image = await buildTinyImage(layout, 'console/tiny:1');
    expect(await remote.exists('console/tiny:1')).toBe(false);
    expect(await remote.push('console/tiny:1')).toBe(image.digest);
    expect(await remote.exists('console/tiny:1')).toBe(true);

    await layout.untag('console/tiny:1');
    await layout.gc();
    expect(await layout.resolve('console/tiny:1')).toBeNull();
    const pulled = await remote.pull('console/tiny:1');
    expect(pulled).toEqual({ ...image, ref: 'console/tiny:1' });
    for (const l of pulled.layers) await layout.verifyBlob(l.digest);

    const otherHost = await OciLayout.open(path.join(work, 'other-host'));
    const there = await new OperatorRegistry(otherHost, { url: registry.url, user: USER, password: PASSWORD }).pull('console/tiny:1');
    expect(there.digest).toBe(image.digest);
    expect(await otherHost.list()).toHaveLength(1);
    // What skopeo wrote went into the layout; nothing of its working folders is left.
    expect(readdirSync(layout.dir).sort()).toEqual(['.tmp', 'blobs', 'index.json', 'oci-layout']);
  });

  it('a saved image goes to the registry with its base by digest; another host pulls both once to boot it, and gc drops it once deleted', async () => {
    const options = { url: registry.url, user: USER, password: PASSWORD };
    const hostA = new MachineImages(path.join(work, 'host-a'), 'bwrap', options);
    const base = await buildTinyImage(await OciLayout.open(path.join(work, 'host-a', 'oci')), 'console/tiny-base:1');
    const tree = path.join(work, 'saved-tree');
    mkdirSync(path.join(tree, 'root'), { recursive: true });
    writeFileSync(path.join(tree, 'root', 'saved.txt'), 'made on host A');
    execFileSync('tar', ['-c', '-f', `${tree}.tar`, '-C', tree, '.']);
    const saved = await hostA.save('img-1', `${tree}.tar`, base.digest, 'instance-1');
    expect(await remote.exists('saved/img-1')).toBe(true);
    expect(await remote.exists(`console/tiny-base@${base.digest}`)).toBe(true);

    const hostB = new MachineImages(path.join(work, 'host-b'), 'bwrap', options);
    const spec = { userImageRef: 'img-1', imageRef: null } as MachineSpec;
    const [one, two] = await Promise.all([hostB.sourceOf(spec), hostB.sourceOf(spec)]);
    expect(one.digest).toBe(base.digest);
    expect(two).toEqual(one);
    const layoutB = await OciLayout.open(path.join(work, 'host-b', 'oci'));
    expect((await layoutB.list()).map((i) => i.ref).sort()).toEqual([`console/tiny-base@${base.digest}`, 'saved/img-1']);
    expect((await layoutB.resolve('saved/img-1'))?.digest).toBe(saved.digest);
    expect(readFileSync(one.layer!).length).toBe(saved.layers.at(-1)!.size);

    // Deleted by its owner: the name and its own layer go, the base stays.
    const gc = await hostB.gc(new Set(), []);
    expect(gc.untagged).toEqual(['saved/img-1']);
    expect(existsSync(one.layer!)).toBe(false);
    expect((await layoutB.list()).map((i) => i.ref)).toEqual([`console/tiny-base@${base.digest}`]);
  });

  it('pulls a catalogue image this host lacks before a machine is laid out on it; one it nowhere finds is refused', async () => {
    const options = { url: registry.url, user: USER, password: PASSWORD };
    const image = await buildTinyImage(layout, 'console/registered:1');
    await remote.push('console/registered:1');
    const host = new MachineImages(path.join(work, 'host-c'), 'bwrap', options);
    const spec = { userImageRef: null, imageRef: 'console/registered:1' } as MachineSpec;
    expect((await host.sourceOf(spec)).digest).toBe(image.digest);
    expect((await (await OciLayout.open(path.join(work, 'host-c', 'oci'))).list()).map((i) => i.ref)).toEqual(['console/registered:1']);
    await expect(host.sourceOf({ ...spec, imageRef: 'console/nowhere:1' })).rejects.toThrow(/未在本主机上构建或拉取/);
  });

  it('镜像登记 checks a reference in the registry, pulls it and gives an application its own image there', async () => {
    const image = await buildTinyImage(layout, 'ai/sd-webui:1.9');
    await remote.push('ai/sd-webui:1.9');
    const host = path.join(work, 'host-d', 'oci');
    const registrar = new ImageRegistrar(host, { url: registry.url, user: USER, password: PASSWORD });
    const hostPort = new URL(registry.url).host;
    expect(await registrar.check(`${hostPort}/ai/sd-webui:1.9`)).toEqual({ localRef: 'ai/sd-webui:1.9', digest: image.digest, source: 'registry' });
    await expect(registrar.check('ai/absent:1')).rejects.toMatchObject({ kind: 'missing' });
    await expect(registrar.check('registry.other.example/ai/sd-webui:1.9')).rejects.toMatchObject({ kind: 'foreign' });
    const refused = new ImageRegistrar(host, { url: registry.url, user: USER, password: 'wrong' });
    await expect(refused.check('ai/sd-webui:1.9')).rejects.toMatchObject({ kind: 'unavailable' });

    const offered = await registrar.prepare({ id: 'reg-ai-sd-webui-1-9', localRef: 'ai/sd-webui:1.9', command: 'python3 launch.py --listen', port: 7860 });
    expect(offered).toBe('registered/reg-ai-sd-webui-1-9:1');
    expect(await registrar.present(offered)).toBe(true);
    // Another host pulls the application's own image as it is: the command and port come with it.
    const other = await OciLayout.open(path.join(work, 'host-e', 'oci'));
    const pulled = await new OperatorRegistry(other, { url: registry.url, user: USER, password: PASSWORD }).pull(offered);
    expect(pulled.config).toMatchObject({ cmd: ['/bin/sh', '-c', 'python3 launch.py --listen'], exposedPorts: [7860] });
    expect(pulled.layers.map((l) => l.digest)).toEqual(image.layers.map((l) => l.digest));
  });

  it('says no for an image the registry does not have', async () => {
    expect(await remote.exists('console/absent:1')).toBe(false);
    await expect(remote.pull('console/absent:1')).rejects.toThrow(/镜像仓库中没有 console\/absent:1/);
  });

  it('refuses a wrong password with a clear error, without showing it', async () => {
    const wrong = new OperatorRegistry(layout, { url: registry.url, user: USER, password: 'not-the-password' });
    const error = await wrong.exists('console/tiny:1').then(
      () => null,
      (e: Error) => e,
    );
    expect(error?.message).toMatch(/拒绝了登录，请检查 REGISTRY_USER \/ REGISTRY_PASSWORD/);
    expect(error?.message).not.toContain('not-the-password');
    await expect(new OperatorRegistry(layout, { url: registry.url }).pull('console/tiny:1')).rejects.toThrow(/拒绝了登录/);
  });
});

describe('registry errors', () => {
  it('names an image inside REGISTRY_URL and refuses one of another registry', async () => {
    const layout = await OciLayout.open(mkdtempSync(path.join(tmpdir(), 'oci-names-')));
    const acr = new OperatorRegistry(layout, { url: 'https://registry.example.com/console' });
    expect(acr.nameOf('registry.example.com/console/ai/sd-webui:1.9')).toBe('ai/sd-webui:1.9');
    expect(acr.nameOf('ai/comfyui@sha256:' + 'a'.repeat(64))).toBe('ai/comfyui@sha256:' + 'a'.repeat(64));
    expect(() => acr.nameOf('docker.io/library/ubuntu:22.04')).toThrow(/不在镜像仓库/);
    expect(() => acr.nameOf('registry.example.com/other/ubuntu:22.04')).toThrow(/不在镜像仓库/);
    rmSync(layout.dir, { recursive: true, force: true });
  });

  it('tells an unreachable registry from a missing image', () => {
    expect(registryError('dial tcp 10.0.0.9:5000: connect: connection refused', 'a:1', 'http://10.0.0.9:5000').kind).toBe('unreachable');
    expect(registryError('reading manifest 1 in x/a: manifest unknown: manifest unknown', 'a:1', 'u').kind).toBe('missing');
  });
});
