/**
 * sftp and scp into a machine whose image has no sftp-server (ComputeDriver.serviceMissing 'sftp'):
 * the SSH gateway says so on the channel's error output, which the client prints, and runs nothing;
 * where the image has one it runs it as before. The gateway on its own, with a driver that only
 * answers these questions (the real sftp is ssh.sandbox.test.ts's).
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client } from 'ssh2';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ComputeDriver } from '../../drivers/compute/types.js';
import { SshGateway } from './ssh-gateway.js';

const WHY = '该实例的镜像没有 sftp-server（Debian 的 openssh-sftp-server 软件包），无法用 sftp、scp 传输文件；请使用带 sftp-server 的镜像';

describe('sftp into a machine whose image has no sftp-server', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'ssh-sftp-missing-'));
  const id = randomUUID();
  let missing: string | null = WHY;
  let ran: string[] | undefined;
  const driver: ComputeDriver = {
    name: 'fake',
    submit: async () => {},
    status: async () => null,
    diskUsage: async () => new Map(),
    events: async () => [],
    shell: (_id, command) => {
      ran = command;
      return { file: '/bin/sh', args: ['-c', 'echo sftp-server ran >&2; exit 3'], env: { PATH: '/usr/bin:/bin' } };
    },
    serviceMissing: (_id, service) => (service === 'sftp' ? missing : null),
  };
  const gateway = new SshGateway({
    driver,
    runningIds: () => [id],
    login: async (ids) => ids[0] ?? null,
    keyLogin: async () => null,
    hostKeyFile: path.join(dir, 'host_key'),
    log: () => {},
  });
  let port = 0;
  beforeAll(async () => {
    port = await gateway.listen(0, '127.0.0.1');
  });
  afterAll(async () => {
    await gateway.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** What the sftp subsystem's channel says on its error output, and its exit code. */
  async function sftpChannel(): Promise<{ stderr: string; code: number | null }> {
    const c = new Client();
    await new Promise<void>((resolve, reject) => {
      c.once('ready', () => resolve());
      c.once('error', reject);
      c.connect({ host: '127.0.0.1', port, username: 'root', password: 'pw' });
    });
    try {
      return await new Promise((resolve, reject) => {
        c.subsys('sftp', (e, stream) => {
          if (e) return reject(e);
          let stderr = '';
          let code: number | null = null;
          stream.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
          stream.on('exit', (n: number | null) => (code = n));
          stream.on('close', () => resolve({ stderr, code }));
          stream.resume();
        });
      });
    } finally {
      c.end();
    }
  }

  it('says why on the channel and runs nothing; with sftp-server it runs it', async () => {
    expect(await sftpChannel()).toEqual({ stderr: `${WHY}\r\n`, code: 1 });
    expect(ran).toBeUndefined();

    missing = null;
    expect(await sftpChannel()).toEqual({ stderr: 'sftp-server ran\n', code: 3 });
    expect(ran).toEqual(['/usr/lib/openssh/sftp-server']);
  });
});
