/**
 * 文件存储 on real sandboxes: the console's file browser API on the account's tree, the same tree at
 * /root/shared inside its local instances, and links planted from inside leading nowhere.
 */
import { existsSync, lstatSync, mkdtempSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API, type FileStoreListing } from '@console/contract';
import { get, json, multipart, post, startTestServer, type TestServer } from '../../../test/harness.js';
import { lacks } from '../../../test/host-packages.js';
import { localEnv, localKit } from '../../../test/local-kit.js';
import { runIn } from '../../drivers/compute/local/sandbox.js';
import { FileStore, LISTED_MAX } from './store.js';

let s: TestServer;
/** In the console's environment: whatever a link reaches must not show it. */
const CANARY = `filestore-canary-${process.pid}`;
const kit = localKit(() => s);

const list = async (token: string, at = '/', server = s) =>
  json<FileStoreListing>(await get(server.app, `${API.fileStore}?path=${encodeURIComponent(at)}`, token));
async function upload(token: string, folder: string, name: string, content: string, server = s) {
  const { payload, headers } = multipart(name, Buffer.from(content), 'text/plain');
  return server.app.inject({
    method: 'POST',
    url: `${API.fileStoreUpload}?path=${encodeURIComponent(folder)}`,
    payload,
    headers: { ...headers, authorization: `Bearer ${token}` },
  });
}
const download = (token: string, at: string) => get(s.app, `${API.fileStoreDownload}?path=${encodeURIComponent(at)}`, token);
const remove = (token: string, at: string) =>
  s.app.inject({ method: 'DELETE', url: `${API.fileStore}?path=${encodeURIComponent(at)}`, headers: { authorization: `Bearer ${token}` } });

beforeAll(async () => {
  process.env.FILESTORE_TEST_CANARY = CANARY;
  s = await startTestServer({ env: localEnv() });
});
afterAll(async () => s.close());

describe.skipIf(lacks('bubblewrap', 'e2fsprogs'))('文件存储', () => {
  it('keeps folders and files: upload, list, download, rename, delete, with the space used', async () => {
    const u = await kit.fundedUser('10');
    expect(await list(u.token)).toMatchObject({ path: '/', entries: [], usedBytes: 0, quotaBytes: 20 * 1024 ** 3 });
    expect((await post(s.app, API.fileStoreFolder, { parent: '/', name: '数据集' }, u.token)).statusCode).toBe(200);
    const up = await upload(u.token, '/数据集', 'train.txt', 'line one\nline two\n');
    expect(up.statusCode, up.body).toBe(200);
    expect(json(up)).toMatchObject({ name: 'train.txt', path: '/数据集/train.txt', size: 18 });

    expect((await list(u.token)).entries).toMatchObject([{ name: '数据集', dir: true }]);
    const inside = await list(u.token, '/数据集');
    expect(inside).toMatchObject({ entries: [{ name: 'train.txt', dir: false, size: 18 }], usedBytes: 18 });
    const file = await download(u.token, '/数据集/train.txt');
    expect(file.statusCode).toBe(200);
    expect(file.body).toBe('line one\nline two\n');
    expect(file.headers['content-disposition']).toContain("filename*=UTF-8''train.txt");

    expect((await post(s.app, API.fileStoreRename, { path: '/数据集/train.txt', name: 'val.txt' }, u.token)).statusCode).toBe(200);
    expect((await list(u.token, '/数据集')).entries.map((e) => e.name)).toEqual(['val.txt']);
    expect((await remove(u.token, '/数据集')).statusCode).toBe(200);
    expect(await list(u.token)).toMatchObject({ entries: [], usedBytes: 0 });
  });

  it('refuses what cannot be done with a clear code, changing nothing', async () => {
    const u = await kit.fundedUser('10');
    await upload(u.token, '/', 'a.txt', 'a');
    expect(json(await upload(u.token, '/', 'a.txt', 'other'))).toMatchObject({ code: 40931001 });
    expect((await download(u.token, '/a.txt')).body).toBe('a');
    expect(json(await post(s.app, API.fileStoreFolder, { parent: '/', name: 'a.txt' }, u.token))).toMatchObject({ code: 40931001 });
    expect(json(await post(s.app, API.fileStoreFolder, { parent: '/', name: '../up' }, u.token))).toMatchObject({ code: 40000001 });
    expect((await get(s.app, `${API.fileStore}?path=${encodeURIComponent('/../..')}`, u.token)).statusCode).toBe(400);
    expect(json(await get(s.app, `${API.fileStore}?path=/nope`, u.token))).toMatchObject({ code: 40400003 });
    expect(json(await get(s.app, `${API.fileStore}?path=/a.txt`, u.token))).toMatchObject({ code: 40031002 });
    expect(json(await post(s.app, API.fileStoreFolder, { parent: '/', name: 'd' }, u.token))).toMatchObject({ ok: true });
    expect(json(await download(u.token, '/d'))).toMatchObject({ code: 40031003 });
    expect((await remove(u.token, '/')).statusCode).toBe(400);
    expect((await list(u.token)).entries.map((e) => e.name)).toEqual(['d', 'a.txt']);
    // Another account has a tree of its own.
    const other = await kit.fundedUser('10');
    expect((await list(other.token)).entries).toEqual([]);
    expect(json(await download(other.token, '/a.txt'))).toMatchObject({ code: 40400003 });
  });

  it('follows no link planted from inside a machine to the host', async () => {
    const u = await kit.fundedUser('10');
    await list(u.token); // the tree ready (mounted where it is an image) before links are planted in it
    const tree = s.ctx.fileStore!.treeOf(u.user.id);
    symlinkSync('/etc/passwd', path.join(tree, 'passwd'));
    symlinkSync('/root', path.join(tree, 'hostroot'));
    expect((await list(u.token)).entries).toEqual([]);
    expect(json(await download(u.token, '/passwd'))).toMatchObject({ code: 40400003 });
    expect(json(await get(s.app, `${API.fileStore}?path=/hostroot`, u.token))).toMatchObject({ code: 40400003 });
    expect(json(await upload(u.token, '/hostroot', 'x.txt', 'x'))).toMatchObject({ code: 40400003 });
    expect(existsSync('/root/x.txt')).toBe(false);
  });

  it('never follows a link in the tree, wherever it leads: every operation acts on the tree itself, links are not listed', async () => {
    const u = await kit.fundedUser('10');
    const neighbour = await kit.fundedUser('10');
    await upload(neighbour.token, '/', 'secret.txt', 'neighbour-secret');
    // Both trees ready (mounted where they are images) before links are planted in them, as a machine's root would.
    await post(s.app, API.fileStoreFolder, { parent: '/', name: 'real' }, u.token);
    await upload(u.token, '/real', 'keep.txt', 'kept');
    const tree = s.ctx.fileStore!.treeOf(u.user.id);
    const plant = (target: string, name: string) => symlinkSync(target, path.join(tree, name));
    plant('/proc/1/environ', 'environ');
    plant('/proc/1', 'pid1');
    plant('/proc/self/root/usr', 'usr');
    plant('/etc/shadow', 'shadow');
    plant(`../${neighbour.user.id}`, 'neighbour');
    plant(s.ctx.fileStore!.treeOf(neighbour.user.id), 'neighbour-abs');
    plant('real', 'alias');
    plant('real/keep.txt', 'keep-alias');

    expect((await list(u.token)).entries.map((e) => e.name)).toEqual(['real']);
    for (const at of [
      '/environ',
      '/pid1/environ',
      '/usr/bin/env',
      '/shadow',
      '/neighbour/secret.txt',
      '/neighbour-abs/secret.txt',
      '/alias/keep.txt',
      '/keep-alias',
    ]) {
      const res = await download(u.token, at);
      expect([at, res.statusCode, res.body]).toEqual([at, 404, expect.not.stringContaining(CANARY)]);
      expect(json(res), at).toMatchObject({ code: 40400003 });
    }
    for (const at of ['/pid1', '/usr', '/neighbour', '/neighbour-abs', '/alias']) {
      expect(json(await get(s.app, `${API.fileStore}?path=${encodeURIComponent(at)}`, u.token)), at).toMatchObject({ code: 40400003 });
      expect(json(await upload(u.token, at, 'planted.txt', 'x')), at).toMatchObject({ code: 40400003 });
      expect(json(await post(s.app, API.fileStoreFolder, { parent: at, name: 'planted' }, u.token)), at).toMatchObject({ code: 40400003 });
    }
    // Nothing was changed through a link: not the folder a link names, not the neighbour's tree.
    expect(json(await post(s.app, API.fileStoreRename, { path: '/alias/keep.txt', name: 'moved.txt' }, u.token))).toMatchObject({ code: 40400003 });
    expect(json(await remove(u.token, '/alias/keep.txt'))).toMatchObject({ code: 40400003 });
    expect(json(await remove(u.token, '/neighbour-abs/secret.txt'))).toMatchObject({ code: 40400003 });
    expect((await list(u.token, '/real')).entries.map((e) => e.name)).toEqual(['keep.txt']);
    expect((await list(neighbour.token)).entries.map((e) => e.name)).toEqual(['secret.txt']);
    // A link itself is the user's to rename or delete (the name, never what it leads to).
    expect((await post(s.app, API.fileStoreRename, { path: '/keep-alias', name: 'renamed-link' }, u.token)).statusCode).toBe(200);
    expect(lstatSync(path.join(tree, 'renamed-link')).isSymbolicLink()).toBe(true);
    expect((await remove(u.token, '/neighbour-abs')).statusCode).toBe(200);
    expect((await remove(u.token, '/alias')).statusCode).toBe(200);
    expect(existsSync(path.join(tree, 'alias'))).toBe(false);
    expect((await download(u.token, '/real/keep.txt')).body).toBe('kept');
    expect((await download(neighbour.token, '/secret.txt')).body).toBe('neighbour-secret');
    // Its name is taken: no folder or upload goes there, nor through it.
    expect(json(await post(s.app, API.fileStoreFolder, { parent: '/', name: 'environ' }, u.token))).toMatchObject({ code: 40931001 });
    expect(json(await upload(u.token, '/', 'environ', 'x'))).toMatchObject({ code: 40931001 });
  });

  it('stops an upload that would pass the quota and keeps nothing of it', async () => {
    const root = mkdtempSync(path.join(tmpdir(), 'console-filestore-'));
    const store = new FileStore({ root, quotaBytes: 10 });
    await expect(store.write('acct', '/', 'big.bin', Readable.from([Buffer.alloc(8), Buffer.alloc(8)]))).rejects.toMatchObject({ code: 40031001 });
    expect((await store.list('acct', '/')).entries).toEqual([]);
    expect(await store.write('acct', '/', 'ok.bin', Readable.from([Buffer.alloc(6)]))).toBe(6);
    // A refused upload never takes an existing name with it.
    await store.makeFolder('acct', '/', 'data');
    await store.write('acct', '/data', 'keep.txt', Readable.from([Buffer.from('k')]));
    await expect(store.write('acct', '/', 'data', Readable.from([Buffer.alloc(8)]))).rejects.toBeDefined();
    expect((await store.list('acct', '/data')).entries.map((e) => e.name)).toEqual(['keep.txt']);
  });

  it('is the same tree at /root/shared in every local instance of the account', async () => {
    const u = await kit.fundedUser('100');
    await upload(u.token, '/', 'from-console.txt', 'uploaded in the console\n');
    const id = await kit.runningInstance(u.token);
    const sandbox = kit.driver().sandbox(id)!;
    expect((await runIn(sandbox, ['cat', '/root/shared/from-console.txt'])).stdout).toBe('uploaded in the console\n');
    // What the console wrote is the machine root's to change (as root, both run as the account's host uid).
    expect(await runIn(sandbox, ['/bin/sh', '-c', 'echo edited >> /root/shared/from-console.txt && stat -c %u /root/shared/from-console.txt'])).toMatchObject({
      code: 0,
      stdout: '0\n',
    });
    if (process.getuid?.() === 0) {
      const onHost = statSync(path.join(s.ctx.fileStore!.treeOf(u.user.id), 'from-console.txt'));
      expect(onHost.uid).toBe(await kit.driver().hostUidOf(u.user.id));
      expect(onHost.uid).not.toBe(0);
      // The machines' uids walk through DATA_DIR to their disks and trees, and into nothing else of it.
      expect(statSync(path.join(s.dataDir, 'files')).mode & 0o077).toBe(0);
    }
    await runIn(sandbox, ['/bin/sh', '-c', 'echo made-inside > /root/shared/from-machine.txt']);
    expect((await download(u.token, '/from-machine.txt')).body).toBe('made-inside\n');
    // Links the machine's root plants there lead nowhere in the console (the next test tries every operation).
    await runIn(sandbox, ['/bin/sh', '-c', 'ln -s /proc/1/environ /root/shared/environ && ln -s / /root/shared/machine-root']);
    const environ = await download(u.token, '/environ');
    expect([environ.statusCode, environ.body]).toEqual([404, expect.not.stringContaining(CANARY)]);
    expect(json(await get(s.app, `${API.fileStore}?path=/machine-root`, u.token))).toMatchObject({ code: 40400003 });
    writeFileSync(path.join(s.ctx.fileStore!.treeOf(u.user.id), 'direct.txt'), 'x');
    expect((await list(u.token)).entries.map((e) => e.name)).toEqual(['direct.txt', 'from-console.txt', 'from-machine.txt']);
  });

  it('lists a folder a machine filled with files a page at a time: the first 5,000 and that there are more, the space used counted whole', async () => {
    const u = await kit.fundedUser('100');
    const id = await kit.runningInstance(u.token);
    const sandbox = kit.driver().sandbox(id)!;
    // Millions of names would be gigabytes of listing read by the console; what it reads stays a page.
    const made = await runIn(sandbox, [
      'python3',
      '-c',
      "import os\nos.mkdir('/root/shared/many')\nfor i in range(5003):\n    open('/root/shared/many/f%05d' % i, 'w').write('xy')",
    ]);
    expect(made.code).toBe(0);
    const many = await list(u.token, '/many');
    expect(many.entries).toHaveLength(LISTED_MAX);
    expect(many.truncated).toBe(true);
    expect(many.usedBytes).toBe(5003 * 2);
    expect((await list(u.token, '/')).truncated).toBe(false);
  });

  it('holds writes from inside the machines to the quota too, as root: the tree is a file system of its size', async () => {
    const small = await startTestServer({ env: localEnv({ FILESTORE_QUOTA_GB: '1' }) });
    try {
      const k = localKit(() => small);
      const u = await k.fundedUser('100');
      const id = await k.runningInstance(u.token);
      const fill = await runIn(k.driver().sandbox(id)!, ['/bin/sh', '-c', 'dd if=/dev/zero of=/root/shared/fill bs=1M count=1300 2>&1']);
      if (process.getuid?.() !== 0) {
        // Not root: no images; the quota holds for the console's uploads only (the test above).
        expect(fill.code).toBe(0);
        return;
      }
      expect(fill.code).not.toBe(0);
      expect(fill.stdout).toContain('No space left on device');
      // The console sees what the machine wrote (its file system's own lost+found is not shown), and uploads no more.
      const listing = await list(u.token, '/', small);
      expect(listing.entries.map((e) => e.name)).toEqual(['fill']);
      expect(listing.usedBytes).toBeGreaterThan(1024 ** 3);
      expect(json(await upload(u.token, '/', 'more.txt', 'x', small)).code).toBe(40031001);
    } finally {
      await small.close();
    }
    // A gigabyte written through a loop-mounted image: 10–50 s on a loaded 2-core machine.
  }, 180_000);
});
