import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { get, json, type TestServer, startTestServer } from '../../../test/harness.js';
import { DEFAULT_CATALOGUE_FILE } from './seed-file.js';

const SETTINGS = '/api/v1/site/settings';
const AGREEMENT = '/api/v1/site/agreements';
/** Without COMFYUI_URL and TRAINER_DRIVER=kohya, images and LoRA training come from the embedded stand-ins. */
const EMBEDDED = { images: true, training: true };

/** A server on a copy of the shipped catalogue file, which the test then edits as an operator would. */
describe('the public site settings and agreements (operator settings of the catalogue file)', () => {
  let s: TestServer;
  let file: string;
  const original = JSON.parse(readFileSync(DEFAULT_CATALOGUE_FILE, 'utf8'));
  /** Each edit is the catalogue's next version. */
  let version = original.version as number;
  const withSettings = async (settings: Record<string, unknown>) => {
    writeFileSync(file, JSON.stringify({ ...original, version: ++version, settings: { ...original.settings, ...settings } }));
    await s.ctx.reloadCatalogue();
  };

  beforeAll(async () => {
    file = path.join(mkdtempSync(path.join(tmpdir(), 'site-')), 'catalogue.json');
    writeFileSync(file, JSON.stringify(original));
    s = await startTestServer({ env: { CATALOGUE_FILE: file } });
  });
  afterAll(async () => s.close());

  it('has no customer-service link until the operator sets one, and then publishes it to visitors', async () => {
    expect(json(await get(s.app, SETTINGS))).toEqual({ customerServiceUrl: null, simulated: EMBEDDED, host: null });
    // The promotion no longer carries it: the site settings are the one place.
    expect(json(await get(s.app, '/order/api/v2.1/promotion'))).not.toHaveProperty('customerServiceUrl');

    await withSettings({ customerServiceUrl: 'https://work.weixin.qq.com/kfid/kfc1234567890abcdef' });
    const res = await get(s.app, SETTINGS);
    expect(res.statusCode).toBe(200);
    expect(json(res)).toEqual({ customerServiceUrl: 'https://work.weixin.qq.com/kfid/kfc1234567890abcdef', simulated: EMBEDDED, host: null });

    // "" means unset, like leaving it out.
    await withSettings({ customerServiceUrl: '' });
    expect(json(await get(s.app, SETTINGS))).toEqual({ customerServiceUrl: null, simulated: EMBEDDED, host: null });
  });

  it('says which image services are real: a ComfyUI at COMFYUI_URL makes the images, training stays embedded', async () => {
    const real = await startTestServer({ env: { CATALOGUE_FILE: file, COMFYUI_URL: 'http://127.0.0.1:9' } });
    try {
      expect(json(await get(real.app, SETTINGS)).simulated).toEqual({ images: false, training: true });
    } finally {
      await real.close();
    }
  });

  it('refuses a customer-service link that is not an http(s) address, keeping the last good settings', async () => {
    await withSettings({ customerServiceUrl: 'https://work.weixin.qq.com/kfid/good' });
    writeFileSync(file, JSON.stringify({ ...original, settings: { ...original.settings, customerServiceUrl: 'javascript:alert(1)' } }));
    await expect(s.ctx.reloadCatalogue()).rejects.toThrow(/settings\.customerServiceUrl 项有误：客服链接须为 http:\/\/ 或 https:\/\/ 开头的网址/);
    expect(json(await get(s.app, SETTINGS))).toEqual({ customerServiceUrl: 'https://work.weixin.qq.com/kfid/good', simulated: EMBEDDED, host: null });
  });

  it('serves the default 用户协议 and 隐私政策 to visitors without a session', async () => {
    await withSettings({});
    const user = await get(s.app, `${AGREEMENT}/user`);
    expect(user.statusCode).toBe(200);
    expect(json(user)).toMatchObject({ kind: 'user', title: '用户协议' });
    expect(json(user).content).toMatch(/^欢迎使用本算力云平台/);
    expect(json(user).content).toContain('## 二、服务内容与计费');
    const privacy = json(await get(s.app, `${AGREEMENT}/privacy`));
    expect(privacy).toMatchObject({ kind: 'privacy', title: '隐私政策' });
    expect(privacy.content).toContain('我们收集的信息');
  });

  it('serves the operator’s own text, given as a string or as an array of lines', async () => {
    await withSettings({ userAgreement: ['# 星河算力用户协议', '', '第一条 ……'], privacyPolicy: '# 星河隐私政策\n\n我们只收集必要信息。' });
    expect(json(await get(s.app, `${AGREEMENT}/user`)).content).toBe('# 星河算力用户协议\n\n第一条 ……');
    expect(json(await get(s.app, `${AGREEMENT}/privacy`)).content).toBe('# 星河隐私政策\n\n我们只收集必要信息。');

    writeFileSync(file, JSON.stringify({ ...original, settings: { ...original.settings, userAgreement: '   ' } }));
    await expect(s.ctx.reloadCatalogue()).rejects.toThrow(/settings\.userAgreement 项有误：协议内容不能为空/);
  });

  it('answers an unknown document with a 400 that names the two there are, never a 500', async () => {
    for (const kind of ['terms', '..%2F..%2Fetc', '%00']) {
      const res = await get(s.app, `${AGREEMENT}/${kind}`);
      expect(res.statusCode).toBe(400);
      expect(json(res)).toMatchObject({ code: 40000001, detail: 'kind：协议只有 user（用户协议）和 privacy（隐私政策）两种' });
    }
  });
});
