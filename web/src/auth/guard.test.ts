import { describe, expect, it } from 'vitest';
import { PAGE } from '@console/contract';
import { metaFor } from '../routes';
import { guard, safeRedirect, type GuardInput } from './guard';
import type { SessionUser } from './permissions';

const adult: SessionUser = { isChild: false, certified: false, certStatus: 'Init' };
const certified: SessionUser = { isChild: false, certified: true, certStatus: 'Succeed' };
const child = (flags: Partial<SessionUser>): SessionUser => ({ ...adult, isChild: true, ...flags });

function run(url: string, over: Partial<GuardInput> = {}) {
  const { pathname, search } = new URL(url, 'http://console.test');
  return guard({ pathname, search, token: 'tok', user: adult, from: null, ...over }, metaFor);
}

describe('guard: visitors (no token)', () => {
  it('sends a protected page to login with the target as redirect', () => {
    expect(run('/console/cost/bill?page=2', { token: null, user: null })).toEqual({
      type: 'redirect',
      to: `/login?redirect=${encodeURIComponent('/console/cost/bill?page=2')}`,
    });
  });

  it.each([PAGE.comfyui, '/rdp/7', PAGE.finance, '/free/3', PAGE.imageShare, PAGE.sdTrain, PAGE.computeCenter, PAGE.modelKey, '/console/ipvm/detail/gpu/9'])(
    '%s requires login',
    (path) => {
      expect(run(path, { token: null, user: null })).toMatchObject({ type: 'redirect', to: expect.stringMatching(/^\/login\?redirect=/) });
    },
  );

  it.each([PAGE.cloudGpu, PAGE.cloudApply, PAGE.login, PAGE.register, PAGE.enterprise, PAGE.purchase])('%s is public', (path) => {
    expect(run(path, { token: null, user: null })).toEqual({ type: 'allow' });
  });

  it('a ?token= lets a protected page pass: stored, and removed from the URL', () => {
    expect(run('/console/app?token=abc&tab=1', { token: null, user: null })).toEqual({
      type: 'redirect',
      to: '/console/app?tab=1',
      storeToken: 'abc',
    });
    // Second pass, token stored: allowed.
    expect(run('/console/app?tab=1', { token: 'abc', user: null })).toEqual({ type: 'allow' });
  });
});

describe('guard: logged in on /login and /register', () => {
  it('goes to the GPU page by default', () => {
    expect(run('/login')).toEqual({ type: 'redirect', to: PAGE.cloudGpu });
    expect(run('/register')).toEqual({ type: 'redirect', to: PAGE.cloudGpu });
  });

  it('follows a same-site redirect target with its query', () => {
    expect(run(`/login?redirect=${encodeURIComponent('/console/cost/bill?page=2')}`)).toEqual({
      type: 'redirect',
      to: '/console/cost/bill?page=2',
    });
  });

  it.each(['//evil.com', '/\\evil.com', 'https://evil.com/x', 'javascript:alert(1)', 'evil.com', '/login', '/\r\nx'])(
    'rejects the open redirect %s',
    (target) => {
      expect(run(`/login?redirect=${encodeURIComponent(target)}`)).toEqual({ type: 'redirect', to: PAGE.cloudGpu });
    },
  );

  it('a child is not sent to a redirect target its flags do not open, and is told why', () => {
    expect(run(`/login?redirect=${encodeURIComponent('/model/key')}`, { user: child({ app: true }) })).toEqual({
      type: 'redirect',
      to: PAGE.app,
      notice: '子账号无权访问「API KEY」，已为您跳转到「镜像应用」（如需权限请联系主账号开通）',
    });
  });
});

describe('guard: child accounts', () => {
  it.each([
    [{ createGPUInstance: true, createImageAPP: true, gpu: true, app: true }, PAGE.cloudGpu],
    [{ createImageAPP: true, gpu: true, app: true }, PAGE.cloudApply],
    [{ gpu: true, app: true }, PAGE.gpuGeneric],
    [{ app: true }, PAGE.app],
    [{}, PAGE.account],
  ])('after login, flags %o land on %s', (flags, home) => {
    expect(run('/login', { user: child(flags) })).toEqual({ type: 'redirect', to: home });
  });

  it('a child without createGPUInstance opening the GPU page is routed by its flags, with a message saying why', () => {
    expect(run(PAGE.cloudGpu, { user: child({ createImageAPP: true }) })).toEqual({
      type: 'redirect',
      to: PAGE.cloudApply,
      notice: '子账号无权访问「GPU 云」，已为您跳转到「镜像应用」（如需权限请联系主账号开通）',
    });
  });

  it.each([PAGE.balance, PAGE.recharge, PAGE.deposit, PAGE.finance])('%s (the parent’s money) needs 财务', (path) => {
    expect(run(path, { user: child({ gpu: true, finance: true }) })).toEqual({ type: 'allow' });
    expect(run(path, { user: child({ gpu: true }) })).toMatchObject({
      type: 'redirect',
      to: PAGE.gpuGeneric,
      notice: expect.stringContaining('子账号无权访问'),
    });
  });

  it('a child that may buy nothing is sent home from the purchase page; one that may, and visitors, are not', () => {
    expect(run(PAGE.purchase, { user: child({ gpu: true }) })).toMatchObject({
      type: 'redirect',
      to: PAGE.gpuGeneric,
      notice: expect.stringContaining('「购买」'),
    });
    expect(run(PAGE.purchase, { user: child({ createImageAPP: true }) })).toEqual({ type: 'allow' });
    expect(run(PAGE.purchase, { token: null, user: null })).toEqual({ type: 'allow' });
  });

  it('a main-account page names itself in the message', () => {
    expect(run(PAGE.cpu, { user: child({}) })).toEqual({
      type: 'redirect',
      to: PAGE.account,
      notice: '子账号无权访问「CPU 实例」，已为您跳转到「账号中心」（如需权限请联系主账号开通）',
    });
  });

  it.each([
    [PAGE.gpuGeneric, { gpu: true }],
    [PAGE.gpuGeneric, { createGPUInstance: true }],
    [PAGE.app, { app: true }],
    [PAGE.app, { createImageAPP: true }],
    [PAGE.cloudApply, { createImageAPP: true }],
    [PAGE.gpudataDisk, { image: true }],
    [PAGE.gpudataMirror, { openYunBucket: true }],
    [PAGE.modelSquare, { usingLLM: true }],
    ['/console/ipvm/detail/gpu/1', { gpu: true }],
    ['/rdp/1', { createGPUInstance: true }],
    [PAGE.bill, {}], // not permission-tagged: open to children (the server shows a child its own bills)
  ])('%s is open to a child with %o', (path, flags) => {
    expect(run(path, { user: child(flags) })).toEqual({ type: 'allow' });
  });

  it.each([
    [PAGE.gpuGeneric, { app: true }, PAGE.app],
    [PAGE.app, { gpu: true }, PAGE.gpuGeneric],
    [PAGE.gpudataDisk, { gpu: true }, PAGE.gpuGeneric],
    [PAGE.modelExperience, { createGPUInstance: true }, PAGE.cloudGpu],
    ['/console/ipvm/detail/gpu/1', { app: true }, PAGE.app],
    ['/rdp/1', { createImageAPP: true }, PAGE.cloudApply],
  ])('%s is closed to a child with %o, which goes to %s', (path, flags, home) => {
    expect(run(path, { user: child(flags) })).toEqual({
      type: 'redirect',
      to: home,
      notice: expect.stringMatching(/^子账号无权访问「.+」，已为您跳转到「.+」/),
    });
  });

  it('permission flags do not limit a normal account', () => {
    expect(run(PAGE.modelKey, { user: adult })).toEqual({ type: 'allow' });
  });
});

describe('guard: creating a dataset needs certification', () => {
  it('opened directly by an uncertified account: to the GPU page', () => {
    expect(run(PAGE.sdDatasetCreate, { from: null })).toEqual({ type: 'redirect', to: PAGE.cloudGpu });
  });
  it('from inside the app: stay and show the certification prompt', () => {
    expect(run(PAGE.sdDatasetCreate, { from: '/sd/dataset?page=2' })).toEqual({ type: 'certPrompt', to: '/sd/dataset?page=2' });
  });
  it('needs certified and Succeed both', () => {
    expect(run(PAGE.sdDatasetCreate, { user: { ...certified, certStatus: 'Pending' }, from: '/sd/dataset' })).toMatchObject({ type: 'certPrompt' });
    expect(run(PAGE.sdDatasetCreate, { user: certified })).toEqual({ type: 'allow' });
  });
});

describe('safeRedirect', () => {
  it('keeps path, query and hash of a relative path', () => {
    expect(safeRedirect('/console/app?x=1#top')).toBe('/console/app?x=1#top');
  });
  it.each([null, '', 'relative', '//x', '/\\x', 'http://x', '/register?y=1', '/x\ny'])('rejects %j', (raw) => {
    expect(safeRedirect(raw)).toBeNull();
  });
});
