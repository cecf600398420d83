/**
 * 账号中心's SSH public keys through the API: a user adds, lists and deletes their own; what is not
 * a usable public key is refused with a message that says why, and changes nothing; 20 at most,
 * even when added at once.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { utils as sshUtils } from 'ssh2';
import { API, ERRORS, SSH_KEYS_PER_USER, type SshKey } from '@console/contract';
import { del, ed25519KeyPair, get, json, post, registerUser, startTestServer, type TestServer } from '../../../test/harness.js';

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
});
afterAll(async () => s.close());

const list = async (token: string) => json<{ items: SshKey[] }>(await get(s.app, API.meSshKeys, token)).items;
const add = (token: string, publicKey: string, name = '笔记本') => post(s.app, API.meSshKeys, { name, publicKey }, token);

describe('SSH public keys', () => {
  it('adds a key with the fingerprint ssh-keygen prints, lists it, deletes it; another user sees and deletes none of it', async () => {
    const u = await registerUser(s);
    const other = await registerUser(s);
    expect(await list(u.token)).toEqual([]);

    // The fingerprint is OpenSSH's: ssh-keygen -lf agrees.
    const dir = mkdtempSync(path.join(tmpdir(), 'console-sshkey-'));
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'me@laptop', '-f', path.join(dir, 'id')]);
    const pub = readFileSync(path.join(dir, 'id.pub'), 'utf8');
    const fingerprint = execFileSync('ssh-keygen', ['-lf', path.join(dir, 'id.pub')], { encoding: 'utf8' }).split(' ')[1];

    const res = await add(u.token, `  ${pub}  `);
    expect(res.statusCode, res.body).toBe(200);
    const key = json<SshKey>(res);
    expect(key).toMatchObject({ name: '笔记本', algorithm: 'ssh-ed25519', fingerprint, lastUsedAt: null });
    expect(await list(u.token)).toEqual([key]);
    expect(await list(other.token)).toEqual([]);

    const url = API.meSshKey.replace(':id', key.id);
    expect(json(await del(s.app, url, other.token)).code).toBe(ERRORS.RECORD_NOT_FOUND.code);
    expect(await list(u.token)).toHaveLength(1);
    expect(json(await del(s.app, url, u.token))).toEqual({ ok: true });
    expect(await list(u.token)).toEqual([]);
    expect(json(await del(s.app, url, u.token)).code).toBe(ERRORS.RECORD_NOT_FOUND.code);
  });

  it('refuses what is not a usable public key, saying why, and keeps nothing', async () => {
    const u = await registerUser(s);
    const pair = ed25519KeyPair();
    const weakRsa = sshUtils.generateKeyPairSync('rsa', { bits: 1024 });
    const cases: [string, RegExp][] = [
      [pair.private, /私钥/],
      ['ssh-ed25519 not-base64-at-all', /格式不正确/],
      ['hello world', /格式不正确/],
      [`${pair.public}\n${ed25519KeyPair().public}`, /一个公钥/],
      [weakRsa.public, /2048–16384 位/],
      // An RSA blob with an empty exponent and modulus (ssh2 throws on it): refused, not a 500.
      [`ssh-rsa ${Buffer.concat([Buffer.from([0, 0, 0, 7]), Buffer.from('ssh-rsa'), Buffer.alloc(8)]).toString('base64')}`, /格式不正确/],
    ];
    for (const [publicKey, message] of cases) {
      const res = await add(u.token, publicKey);
      expect(res.statusCode, publicKey).toBe(400);
      const body = json<{ code: number; message: string; detail?: string }>(res);
      expect(body.code).toBe(ERRORS.SSH_KEY_INVALID.code);
      expect(`${body.message} ${body.detail ?? ''}`).toMatch(message);
    }
    for (const body of [
      { name: '', publicKey: pair.public },
      { name: 'x'.repeat(51), publicKey: pair.public },
      { name: 'a' },
      { name: 'a', publicKey: 'x'.repeat(20_000) },
    ]) {
      expect(json(await post(s.app, API.meSshKeys, body, u.token)).code).toBe(ERRORS.VALIDATION_FAILED.code);
    }
    expect(json(await del(s.app, API.meSshKey.replace(':id', 'nope'), u.token)).code).toBe(ERRORS.VALIDATION_FAILED.code);
    expect((await get(s.app, API.meSshKeys)).statusCode).toBe(401);
    expect((await post(s.app, API.meSshKeys, { name: 'a', publicKey: pair.public })).statusCode).toBe(401);
    expect(await list(u.token)).toEqual([]);

    // The same key twice: once. ECDSA and a 2048-bit RSA are fine.
    expect((await add(u.token, pair.public)).statusCode).toBe(200);
    expect(json(await add(u.token, `${pair.public} another-comment`, '又一次')).code).toBe(ERRORS.SSH_KEY_DUPLICATE.code);
    expect(json<SshKey>(await add(u.token, sshUtils.generateKeyPairSync('ecdsa', { bits: 256 }).public)).algorithm).toBe('ecdsa-sha2-nistp256');
    expect(json<SshKey>(await add(u.token, sshUtils.generateKeyPairSync('rsa', { bits: 2048 }).public)).algorithm).toBe('ssh-rsa');
    expect(await list(u.token)).toHaveLength(3);
  });

  it(`keeps at most ${SSH_KEYS_PER_USER} keys, also when the last ones arrive at once`, async () => {
    const u = await registerUser(s);
    for (let i = 0; i < SSH_KEYS_PER_USER - 2; i++) {
      const res = await add(u.token, ed25519KeyPair().public, `k${i}`);
      expect(res.statusCode, res.body).toBe(200);
    }
    const racing = await Promise.all(Array.from({ length: 6 }, (_, i) => add(u.token, ed25519KeyPair().public, `race${i}`)));
    expect(racing.filter((r) => r.statusCode === 200)).toHaveLength(2);
    expect(racing.filter((r) => json(r).code === ERRORS.SSH_KEY_LIMIT.code)).toHaveLength(4);
    expect(await list(u.token)).toHaveLength(SSH_KEYS_PER_USER);
  });
});
