/**
 * The local driver's sandbox on the real bubblewrap (Debian package `bubblewrap`; .ci/run installs
 * it): the disks survive a stop and a new start, an instance sees neither the host's files nor
 * another instance's, and a sandbox killed from outside is noticed.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { networkInterfaces, tmpdir } from 'node:os';
import path from 'node:path';
import { createServer, type AddressInfo } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { lacks } from '../../../../test/host-packages.js';
import { bwrapWorks, DATA_MOUNT, layOut, removeDisks, runIn, sandboxPaths, startSandbox, stopSandbox, type RunningSandbox } from './sandbox.js';

describe.skipIf(lacks('bubblewrap'))('local compute sandbox (bubblewrap)', () => {
  const host = mkdtempSync(path.join(tmpdir(), 'console-local-host-'));
  const running: RunningSandbox[] = [];
  afterAll(async () => {
    for (const s of running) await stopSandbox(s);
    rmSync(host, { recursive: true, force: true });
  });
  const resolvConf = path.join(host, 'resolv.conf');
  writeFileSync(resolvConf, 'nameserver 10.0.2.3\n');
  const opts = (hostname: string) => ({ hostname, gpuDevices: [], env: { CUDA_VISIBLE_DEVICES: '' }, resolvConf });
  async function started(id: string) {
    const paths = sandboxPaths(host, id);
    const s = await startSandbox(paths, opts(`inst-${id}`));
    running.push(s);
    return s;
  }

  it('works on this machine', async () => {
    expect(bwrapWorks()).toEqual({ ok: true, why: 'bwrap 可用' });
    const missing = bwrapWorks('/nonexistent/bwrap');
    expect(missing.ok).toBe(false);
    expect(missing.why).toContain('安装 Debian 软件包 bubblewrap');
  });

  it('keeps a file of the data disk and of the system layer across a stop and a new start, and removes both on destroy', async () => {
    const paths = sandboxPaths(host, 'a');
    await layOut(paths, 'inst-a', null);
    const first = await started('a');
    const wrote = await runIn(first, ['/bin/sh', '-c', `echo 训练数据 > ${DATA_MOUNT}/note.txt && echo sys > /root/sys.txt && hostname && pwd && id -u`]);
    expect(wrote).toMatchObject({ code: 0, stdout: 'inst-a\n/root\n0\n' });
    await stopSandbox(first);
    expect(readFileSync(path.join(paths.data, 'note.txt'), 'utf8')).toBe('训练数据\n');

    const second = await started('a');
    const read = await runIn(second, ['/bin/sh', '-c', `cat ${DATA_MOUNT}/note.txt /root/sys.txt; echo "gpus=[$CUDA_VISIBLE_DEVICES]"`]);
    expect(read).toMatchObject({ code: 0, stdout: '训练数据\nsys\ngpus=[]\n' });
    await stopSandbox(second);
    await removeDisks(paths);
    expect(() => readFileSync(path.join(paths.data, 'note.txt'))).toThrow();
  });

  it("sees neither the host's files nor another instance's, and its processes are its own", async () => {
    writeFileSync(path.join(host, 'host-secret.txt'), 'secret');
    await layOut(sandboxPaths(host, 'b'), 'inst-b', null);
    await layOut(sandboxPaths(host, 'c'), 'inst-c', null);
    const b = await started('b');
    const c = await started('c');
    await runIn(c, ['/bin/sh', '-c', `echo c-only > ${DATA_MOUNT}/c.txt`]);
    const look = await runIn(b, [
      '/bin/sh',
      '-c',
      `ls /; ls ${DATA_MOUNT}; test -e /work && echo HOST-WORK; test -e ${host} && echo HOST-DIR; test -e /etc/shadow && echo SHADOW; ps -e -o pid= | wc -l`,
    ]);
    expect(look.code).toBe(0);
    const lines = look.stdout.trim().split('\n');
    expect(lines).not.toContain('HOST-WORK');
    expect(lines).not.toContain('HOST-DIR');
    expect(lines).not.toContain('SHADOW');
    expect(lines).not.toContain('c.txt');
    expect(lines).not.toContain('work');
    // Its init, the shell, ps and wc (and the init's sleep): a handful, not the host's hundreds.
    expect(Number(lines.at(-1))).toBeLessThan(10);
  });

  it("reaches nothing listening on the host's loopback (the console's database) nor on its network address, and its root has no power over the host", async () => {
    const listening = createServer((c) => c.end('host-secret\n'));
    await new Promise<void>((r) => listening.listen(0, '0.0.0.0', () => r()));
    const port = (listening.address() as AddressInfo).port;
    // The host's address on its network: refused by the machine's firewall (network-policy.test.ts has the rest of the policy).
    const external = Object.values(networkInterfaces())
      .flat()
      .find((a) => a && a.family === 'IPv4' && !a.internal)?.address;
    expect(external, 'this host has a network address').toBeDefined();
    await layOut(sandboxPaths(host, 'net'), 'inst-net', null);
    const s = await started('net');
    const probe = (addr: string) =>
      runIn(s, ['/bin/bash', '-c', `timeout 3 bash -c 'exec 3<>/dev/tcp/${addr}/${port} && cat <&3' && echo reached || echo refused`]);
    expect((await probe('127.0.0.1')).stdout).toContain('refused');
    // slirp4netns's gateway to the host, with the host's loopback turned off.
    expect((await probe('10.0.2.2')).stdout).toContain('refused');
    expect((await probe(external!)).stdout).toBe('refused\n');
    listening.close();
    const power = await runIn(s, ['/bin/bash', '-c', 'id -u; mknod /root/disk b 8 0 2>&1; mount -o remount,rw /usr 2>&1; touch /usr/x 2>&1; true']);
    expect(power.stdout).toMatch(/^0\n/);
    // Debian's alternatives resolve inside (awk is /etc/alternatives/awk → mawk).
    expect((await runIn(s, ['awk', 'BEGIN { print 6 * 7 }'])).stdout).toBe('42\n');
    expect(power.stdout).toMatch(/mknod: .*Operation not permitted/);
    expect(power.stdout).toMatch(/mount: \/usr: /); // refused, whatever the words
    expect(power.stdout).toMatch(/touch: .*(Read-only file system|Permission denied)/);

    // What the loader of a process joining the machine reads (it holds every capability of the
    // machine's namespace until setpriv drops them) is the host's and stays so: no preload, no
    // cache, no library link of the root folder can be planted.
    for (const attempt of [
      'echo /root/evil.so > /etc/ld.so.preload',
      'rm -f /etc/ld.so.preload',
      'mv /etc/ld.so.preload /root/',
      'cp /bin/true /etc/ld.so.cache',
      'ln -sfn /root /lib64',
      'mkdir /evil',
      'echo nameserver 1.1.1.1 > /etc/resolv.conf',
    ]) {
      expect((await runIn(s, ['/bin/sh', '-c', `${attempt} 2>/dev/null`])).code, attempt).not.toBe(0);
    }
    expect((await runIn(s, ['/bin/sh', '-c', 'cat /etc/ld.so.preload; cat /etc/resolv.conf; ls -l /lib64 | cut -c1'])).stdout).toBe('nameserver 10.0.2.3\nl\n');
  });

  it("binds the host's files over a link or a folder left in the machine's /etc (a saved image may hold any), touching nothing of the host's", async () => {
    const victim = path.join(host, 'victim.txt');
    writeFileSync(victim, 'untouched\n');
    const paths = sandboxPaths(host, 'links');
    await layOut(paths, 'inst-links', null);
    const etc = path.join(paths.system, 'etc');
    rmSync(path.join(etc, 'resolv.conf'), { force: true });
    symlinkSync(victim, path.join(etc, 'resolv.conf'));
    rmSync(path.join(etc, 'ld.so.preload'), { force: true });
    mkdirSync(path.join(etc, 'ld.so.preload', 'a', 'b'), { recursive: true });
    // The data disk's place a link to /etc: bound there, it would cover the loader's files bound above.
    rmSync(path.join(paths.system, 'root', 'autodl-tmp'), { recursive: true, force: true });
    symlinkSync('../etc', path.join(paths.system, 'root', 'autodl-tmp'));
    const s = await started('links');
    expect(readFileSync(victim, 'utf8')).toBe('untouched\n');
    expect((await runIn(s, ['/bin/sh', '-c', 'cat /etc/resolv.conf; test -d /etc/ld.so.preload || echo file'])).stdout).toBe('nameserver 10.0.2.3\nfile\n');
    expect((await runIn(s, ['/bin/sh', '-c', 'echo x > /etc/ld.so.preload 2>/dev/null || echo refused; test -L /root/autodl-tmp || echo folder'])).stdout).toBe(
      'refused\nfolder\n',
    );
  });

  it('notices a sandbox killed from outside', async () => {
    await layOut(sandboxPaths(host, 'd'), 'inst-d', null);
    const d = await started('d');
    process.kill(d.initPid, 'SIGKILL');
    expect(await d.ended).not.toBe(0);
    // Nothing left to join: a command for it fails instead of running somewhere else.
    expect((await runIn(d, ['/bin/true'])).code).not.toBe(0);
  });
});
