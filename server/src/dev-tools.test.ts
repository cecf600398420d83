/**
 * The embedded stand-ins that hand out secrets or money exist only while dev tools are on
 * (config.ts devToolsDecision): off, their paths are plain API 404s.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { get, json, newMobile, post, startTestServer, type TestServer } from '../test/harness.js';
import { BASE, sandboxWiring } from '../test/payment-sandbox.js';

async function openTrade(w: ReturnType<typeof sandboxWiring>, s: TestServer, outTradeNo: string) {
  const { qrContent } = await w.drivers.Alipay.precreate({
    outTradeNo,
    amount: 1_000_000n,
    subject: '余额充值',
    expiresAt: new Date(s.clock.now().getTime() + 15 * 60_000),
    notifyUrl: `${BASE}/billing/api/v1/notify/alipay`,
  });
  return new URL(qrContent).pathname;
}

const NOT_FOUND = { code: 40400001, message: '请求的接口不存在' };

describe('dev tools on (DEV_TOOLS=true)', () => {
  let s: TestServer;
  let w: ReturnType<typeof sandboxWiring>;
  beforeAll(async () => {
    let clock: TestServer['clock'] | null = null;
    w = sandboxWiring(() => clock!.now());
    s = await startTestServer({ env: { DEV_TOOLS: 'true', PUBLIC_BASE_URL: BASE }, drivers: { payment: w.drivers } });
    clock = s.clock;
    w.wiring.app = s.app;
  });
  afterAll(async () => s.close());

  it('the outbox shows a code that was sent', async () => {
    const mobile = newMobile();
    expect((await post(s.app, '/api/v1/users/verify/smscode', { mobile, scene: 'register' })).statusCode).toBe(200);
    const res = await get(s.app, `/dev/outbox?to=${mobile}`);
    expect(res.statusCode).toBe(200);
    expect(json(res).items[0].code).toMatch(/^\d{6}$/);
  });

  it('the fleet’s control panel answers and takes faults', async () => {
    const overview = await get(s.app, '/dev/compute');
    expect(overview.statusCode).toBe(200);
    expect(json(overview)).toMatchObject({ faults: [], lostHosts: [] });
    expect((await post(s.app, '/dev/compute/faults', { kind: 'create' })).statusCode).toBe(200);
    expect(json(await get(s.app, '/dev/compute')).faults).toEqual([expect.objectContaining({ kind: 'create', remaining: 1 })]);
  });

  it('the sandbox scan page shows the trade and its 确认支付 pays it', async () => {
    const page = await openTrade(w, s, 'DEVON1');
    const res = await get(s.app, page);
    expect(res.statusCode).toBe(200);
    expect(res.body).toContain('确认支付');
    const paid = await post(s.app, `${page}/pay`);
    expect(paid.statusCode).toBe(200);
    expect(json(paid).status).toBe('Succeeded');
  });
});

describe('dev tools off (DEV_TOOLS=false)', () => {
  let s: TestServer;
  let w: ReturnType<typeof sandboxWiring>;
  beforeAll(async () => {
    let clock: TestServer['clock'] | null = null;
    w = sandboxWiring(() => clock!.now());
    // PAYMENT_DRIVER=sandbox would not start without dev tools (config.test.ts); the sandbox drivers
    // are given here only to show that even then their scan page is not served.
    s = await startTestServer({ env: { DEV_TOOLS: 'false', PAYMENT_DRIVER: 'real', PUBLIC_BASE_URL: BASE }, drivers: { payment: w.drivers } });
    clock = s.clock;
    w.wiring.app = s.app;
  });
  afterAll(async () => s.close());

  it('nobody reads verification codes: /dev/outbox does not exist', async () => {
    const mobile = newMobile();
    expect((await post(s.app, '/api/v1/users/verify/smscode', { mobile, scene: 'register' })).statusCode).toBe(200);
    const res = await get(s.app, `/dev/outbox?to=${mobile}`);
    expect(res.statusCode).toBe(404);
    expect(json(res)).toMatchObject(NOT_FOUND);
    expect(json(res).items).toBeUndefined();
  });

  it('nobody breaks the fleet: /dev/compute and its faults and hosts do not exist', async () => {
    for (const [method, url] of [
      ['GET', '/dev/compute'],
      ['POST', '/dev/compute/faults'],
      ['POST', '/dev/compute/hosts/bj-b-01/lose'],
      ['POST', '/dev/compute/hosts/bj-b-01/restore'],
    ] as const) {
      const res = await s.app.inject({ method, url, payload: method === 'POST' ? { kind: 'create' } : undefined });
      expect(res.statusCode, url).toBe(404);
      expect(json(res), url).toMatchObject(NOT_FOUND);
    }
  });

  it('nobody marks a trade paid: the scan page and its buttons do not exist', async () => {
    const page = await openTrade(w, s, 'DEVOFF1');
    for (const [method, url] of [
      ['GET', page],
      ['POST', `${page}/pay`],
      ['POST', `${page}/close`],
    ] as const) {
      const res = await s.app.inject({ method, url });
      expect(res.statusCode, url).toBe(404);
      expect(json(res), url).toMatchObject(NOT_FOUND);
    }
  });

  it('an instance’s own JupyterLab link (token-checked) still opens on the simulated fleet', async () => {
    const res = await get(s.app, `/dev/compute/jupyter/${randomUUID()}?token=nope`);
    expect(res.statusCode).toBe(404);
    expect(json(res).detail).toBe('链接无效或已过期');
  });
});
