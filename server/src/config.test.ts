import { describe, expect, it } from 'vitest';
import { ConfigError, devToolsDecision, isLoopbackOrPrivate, loadConfig } from './config.js';
import { chooseComputeDriver } from './drivers/compute/index.js';
import { bwrapWorks } from './drivers/compute/local/sandbox.js';

/** Every driver embedded, as `npm start` has them. */
const EMBEDDED = { SMS_DRIVER: 'outbox', MAIL_DRIVER: 'outbox', PAYMENT_DRIVER: 'sandbox', COMPUTE_DRIVER: 'simulated' };
/** Every driver real: nothing for dev tools to show. */
const REAL = { SMS_DRIVER: 'aliyun', MAIL_DRIVER: 'smtp', PAYMENT_DRIVER: 'real', COMPUTE_DRIVER: 'agent' };
const REAL_ENV = {
  ...REAL,
  ALIYUN_SMS_ACCESS_KEY_ID: 'id',
  ALIYUN_SMS_ACCESS_KEY_SECRET: 'secret',
  ALIYUN_SMS_SIGN_NAME: '算力云',
  ALIYUN_SMS_TEMPLATE_CODE: 'SMS_1',
  SMTP_URL: 'smtps://u:p@smtp.example.com:465',
  COMPUTE_AGENT_URL: 'https://agent.example.com',
  COMPUTE_AGENT_KEY_ID: 'k1',
  COMPUTE_AGENT_SECRET: 'a-shared-secret-of-at-least-32-characters',
};

describe('dev tools (/dev/outbox, /dev/compute, the sandbox scan page): one decision', () => {
  it.each([
    // HOST, DEV_TOOLS, drivers → on
    ['127.0.0.1', undefined, EMBEDDED, true],
    ['localhost', undefined, EMBEDDED, true],
    ['::1', undefined, EMBEDDED, true],
    ['10.1.2.3', undefined, EMBEDDED, true],
    ['172.20.0.5', undefined, EMBEDDED, true],
    ['192.168.1.10', undefined, EMBEDDED, true],
    ['fd12:3456::1', undefined, EMBEDDED, true],
    ['0.0.0.0', undefined, EMBEDDED, false],
    ['::', undefined, EMBEDDED, false],
    ['203.0.113.7', undefined, EMBEDDED, false],
    ['172.32.0.1', undefined, EMBEDDED, false],
    ['console.example.com', undefined, EMBEDDED, false],
    ['0.0.0.0', true, EMBEDDED, true],
    ['0.0.0.0', true, REAL, true],
    ['127.0.0.1', false, EMBEDDED, false],
    ['127.0.0.1', undefined, REAL, false],
    ['127.0.0.1', undefined, { ...REAL, COMPUTE_DRIVER: 'simulated' }, true],
  ] as const)('HOST=%s DEV_TOOLS=%s %o → on: %s', (HOST, DEV_TOOLS, drivers, on) => {
    expect(devToolsDecision({ HOST, DEV_TOOLS, ...drivers }).on).toBe(on);
  });

  it('says why, naming the variable to change', () => {
    expect(devToolsDecision({ HOST: '0.0.0.0', ...EMBEDDED }).reason).toBe('HOST=0.0.0.0 不是本机或内网地址，需要时设置 DEV_TOOLS=true');
    expect(devToolsDecision({ HOST: '127.0.0.1', ...EMBEDDED }).reason).toContain('HOST=127.0.0.1 是本机或内网地址');
    expect(devToolsDecision({ HOST: '127.0.0.1', DEV_TOOLS: false, ...EMBEDDED }).reason).toBe('已设置 DEV_TOOLS=false');
    expect(devToolsDecision({ HOST: '0.0.0.0', DEV_TOOLS: true, ...EMBEDDED }).reason).toBe('已设置 DEV_TOOLS=true');
    expect(devToolsDecision({ HOST: '127.0.0.1', ...REAL }).reason).toBe('未使用任何内置驱动');
  });

  it('reads private and loopback addresses, not look-alikes', () => {
    for (const h of ['127.0.0.1', '127.8.9.10', '[::1]', '::ffff:10.0.0.1', 'fe80::1', 'app.localhost', '169.254.1.1'])
      expect(isLoopbackOrPrivate(h), h).toBe(true);
    for (const h of ['0.0.0.0', '::', '8.8.8.8', 'fc::1', '192.169.0.1', '11.0.0.1', '127.0.0.1.nip.io', '']) expect(isLoopbackOrPrivate(h), h).toBe(false);
  });

  it('COMPUTE_DRIVER=auto (the default) picks local sandboxes where bubblewrap works and the simulated fleet where not, saying why', () => {
    expect(chooseComputeDriver('auto', () => ({ ok: true, why: 'bwrap 可用' }))).toEqual({ name: 'local', why: expect.stringContaining('bwrap 可用') });
    const bare = chooseComputeDriver('auto', () => ({ ok: false, why: '找不到 bwrap（ENOENT）：安装 Debian 软件包 bubblewrap' }));
    expect(bare).toEqual({ name: 'simulated', why: expect.stringContaining('安装 Debian 软件包 bubblewrap') });
    expect(chooseComputeDriver('agent', () => ({ ok: true, why: '' })).name).toBe('agent');
    const c = loadConfig({}, bwrapWorks);
    expect(['local', 'simulated']).toContain(c.COMPUTE_DRIVER);
    expect(c.computeDriverReason).toMatch(/^COMPUTE_DRIVER=auto：/);
    expect(loadConfig({ COMPUTE_DRIVER: 'simulated' })).toMatchObject({ COMPUTE_DRIVER: 'simulated', computeDriverReason: '已设置 COMPUTE_DRIVER=simulated' });
    expect(() => loadConfig({ COMPUTE_DRIVER: 'cloud' })).toThrow(/COMPUTE_DRIVER/);
  });

  it('npm start with no settings listens on loopback only, with dev tools on', () => {
    const c = loadConfig({});
    expect(c.HOST).toBe('127.0.0.1');
    expect(c.devTools).toBe(true);
    expect(c.devToolsReason).toContain('HOST=127.0.0.1');
  });

  it('refuses the embedded payment gateway without its scan page, naming PAYMENT_DRIVER and DEV_TOOLS', () => {
    for (const env of [{ HOST: '0.0.0.0' }, { DEV_TOOLS: 'false' }, { HOST: '0.0.0.0', ...REAL_ENV, PAYMENT_DRIVER: 'sandbox' }]) {
      expect(() => loadConfig(env), JSON.stringify(env)).toThrow(ConfigError);
      expect(() => loadConfig(env)).toThrow(/PAYMENT_DRIVER=sandbox.*DEV_TOOLS=true/s);
    }
    // Deliberately on, or real payments: the server starts.
    expect(loadConfig({ HOST: '0.0.0.0', DEV_TOOLS: 'true' })).toMatchObject({ devTools: true, devToolsReason: '已设置 DEV_TOOLS=true' });
    expect(loadConfig({ HOST: '0.0.0.0', PAYMENT_DRIVER: 'real' })).toMatchObject({ devTools: false });
    expect(loadConfig({ HOST: '0.0.0.0', ...REAL_ENV })).toMatchObject({ devTools: false, devToolsReason: '未使用任何内置驱动' });
    expect(loadConfig({ ...REAL_ENV, PAYMENT_DRIVER: 'real', DEV_TOOLS: 'false' })).toMatchObject({ devTools: false });
  });

  it('names a bad DEV_TOOLS value', () => {
    expect(() => loadConfig({ DEV_TOOLS: 'maybe' })).toThrow(/DEV_TOOLS: 应为 true 或 false/);
  });

  it('SANDBOX_ALLOW_NETS: the ranges local instances may reach after all, a bad one named', () => {
    expect(loadConfig({}).SANDBOX_ALLOW_NETS).toEqual([]);
    expect(loadConfig({ SANDBOX_ALLOW_NETS: '10.1.0.0/16, 192.168.5.7' }).SANDBOX_ALLOW_NETS).toEqual(['10.1.0.0/16', '192.168.5.7']);
    expect(() => loadConfig({ SANDBOX_ALLOW_NETS: '10.1.0.0/40' })).toThrow(/SANDBOX_ALLOW_NETS: "10.1.0.0\/40" 的前缀长度应为 0–32/);
    expect(() => loadConfig({ SANDBOX_ALLOW_NETS: 'intranet' })).toThrow(/SANDBOX_ALLOW_NETS: "intranet" 不是 IP 地址或网段/);
  });
});
