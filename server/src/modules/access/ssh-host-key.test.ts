/**
 * The SSH gateway's host key across replicas (issue 31): behind one address every replica must show the same
 * key, or `ssh` refuses the host as changed whenever the balancer picks another replica. SSH_HOST_KEY gives
 * them one; without it each makes its own under DATA_DIR (which need not exist yet on PostgreSQL).
 */
import { generateKeyPairSync, randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client } from 'ssh2';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../config.js';
import type { ComputeDriver } from '../../drivers/compute/types.js';
import { MemoryCounters } from '../../drivers/counters/index.js';
import { SshGateway } from './ssh-gateway.js';

const dir = mkdtempSync(path.join(tmpdir(), 'ssh-host-key-'));
const driver = { name: 'fake', shell: () => ({ file: '/bin/true', args: [], env: {} }) } as unknown as ComputeDriver;
const gateways: SshGateway[] = [];
afterAll(async () => {
  await Promise.all(gateways.map((g) => g.close()));
  rmSync(dir, { recursive: true, force: true });
});

async function gateway(hostKeyFile: string, hostKeyPem?: string): Promise<number> {
  const g = new SshGateway({
    driver,
    runningIds: () => [randomUUID()],
    login: async () => null,
    keyLogin: async () => null,
    hostKeyFile,
    hostKeyPem,
    log: () => {},
    counters: new MemoryCounters(),
    now: () => Date.now(),
  });
  gateways.push(g);
  return g.listen(0, '127.0.0.1');
}

/** The host key a client is shown at `port`, as base64. */
function shownKey(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const c = new Client();
    let key = '';
    c.once('error', () => (key ? resolve(key) : reject(new Error('no host key shown'))));
    c.connect({
      host: '127.0.0.1',
      port,
      username: 'root',
      password: 'x',
      readyTimeout: 10_000,
      hostVerifier: (k: Buffer) => {
        key = k.toString('base64');
        return true;
      },
    });
  });
}

const pem = () =>
  generateKeyPairSync('rsa', { modulusLength: 2048, privateKeyEncoding: { type: 'pkcs1', format: 'pem' }, publicKeyEncoding: { type: 'spki', format: 'pem' } })
    .privateKey;

describe('the SSH gateway host key', () => {
  it('is the same on every replica given SSH_HOST_KEY', async () => {
    const shared = pem();
    const [a, b] = [await gateway(path.join(dir, 'a', 'key'), shared), await gateway(path.join(dir, 'b', 'key'), shared)];
    expect(await shownKey(a)).toBe(await shownKey(b));
    expect(existsSync(path.join(dir, 'a', 'key'))).toBe(false);
  });

  it('is made once under a DATA_DIR that does not exist yet, and kept', async () => {
    const file = path.join(dir, 'not', 'yet', 'ssh_host_rsa_key');
    const first = await shownKey(await gateway(file));
    expect(existsSync(file)).toBe(true);
    expect(await shownKey(await gateway(file))).toBe(first);
    expect(await shownKey(await gateway(path.join(dir, 'other', 'key')))).not.toBe(first);
  });

  it('refuses an SSH_HOST_KEY that is not a private key at start', () => {
    expect(() => loadConfig({ SSH_HOST_KEY: 'not a key' })).toThrow(/SSH_HOST_KEY/);
    expect(loadConfig({ SSH_HOST_KEY: pem() }).SSH_HOST_KEY).toContain('PRIVATE KEY');
  });
});
