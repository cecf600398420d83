import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { fireEvent, screen, waitFor, within } from '@testing-library/react';
import { NOTICE_DEFAULTS, NOTICE_KINDS, NoticeKindDescription, NoticeKindLabel, type NoticePreferences, type NoticePreferencesUpdate } from '@console/contract';
import { session } from '../../../session/store';
import { callsTo, json } from '../../../test/http';
import { renderApp } from '../../../test/render';
import { user } from '../../../test/fixtures/user';
import { costServer } from '../../../test/fixtures/cost';

const PREFS = '/userapi/api/v2.1/users/me/notice-preferences';

const defaults = (over: Partial<NoticePreferences> = {}): NoticePreferences => ({
  items: NOTICE_KINDS.map((kind) => ({ kind, label: NoticeKindLabel[kind], description: NoticeKindDescription[kind], site: true, ...NOTICE_DEFAULTS[kind] })),
  mobile: '13800138000',
  email: null,
  ...over,
});

/** The preferences as the server keeps them: a PUT changes the kinds it names. */
function prefsServer(start = defaults()) {
  let prefs = start;
  return costServer((url, init) => {
    if (url.pathname !== PREFS) return undefined;
    if (init?.method === 'PUT') {
      const body = JSON.parse(String(init.body)) as NoticePreferencesUpdate;
      prefs = { ...prefs, items: prefs.items.map((i) => ({ ...i, ...body.items.find((b) => b.kind === i.kind) })) };
    }
    return json(200, prefs);
  });
}

const rowOf = async (label: string) => (await screen.findByText(label)).closest<HTMLElement>('tr')!;
const switchIn = (row: HTMLElement, name: string) => within(row).getByLabelText(name) as HTMLButtonElement;

beforeEach(() => session.setLogin('tok', user));
afterEach(() => vi.unstubAllGlobals());

describe('消息通知 (account page, notices tab)', () => {
  it('shows each kind with 站内信 always on and the SMS / e-mail choices, and says where nothing can arrive', async () => {
    prefsServer();
    renderApp('/console/account?tab=notices');
    const stopped = await rowOf('欠费关机通知');
    expect(within(stopped).getByText(NoticeKindDescription.StoppedForArrears)).toBeTruthy();
    const site = switchIn(stopped, '欠费关机通知 站内信');
    expect(site.getAttribute('aria-checked')).toBe('true');
    expect(site.disabled).toBe(true);
    expect(switchIn(stopped, '欠费关机通知 短信').getAttribute('aria-checked')).toBe('true');
    const low = await rowOf('余额不足提醒');
    expect(switchIn(low, '余额不足提醒 短信').getAttribute('aria-checked')).toBe('false');
    expect(switchIn(low, '余额不足提醒 邮件').getAttribute('aria-checked')).toBe('true');
    expect(screen.getByText('尚未绑定邮箱（邮件无法送达）')).toBeTruthy();
  });

  it('saves a switch at once with the kind’s other channel unchanged', async () => {
    const fetch = prefsServer();
    renderApp('/console/account?tab=notices');
    const release = await rowOf('实例释放倒计时');
    fireEvent.click(switchIn(release, '实例释放倒计时 短信'));
    await waitFor(() => expect(callsTo(fetch, PREFS, 'PUT')).toHaveLength(1));
    expect(callsTo(fetch, PREFS, 'PUT')[0]!.body).toEqual({ items: [{ kind: 'ReleaseCountdown', sms: false, mail: true }] });
    expect(await screen.findByText('通知设置已保存')).toBeTruthy();
    await waitFor(() => expect(switchIn(release, '实例释放倒计时 短信').getAttribute('aria-checked')).toBe('false'));

    fireEvent.click(switchIn(await rowOf('有卡通知'), '有卡通知 邮件'));
    await waitFor(() => expect(callsTo(fetch, PREFS, 'PUT')).toHaveLength(2));
    expect(callsTo(fetch, PREFS, 'PUT')[1]!.body).toEqual({ items: [{ kind: 'GpuAvailable', sms: true, mail: false }] });
  });

  it('is a tab a child account has too', async () => {
    const kid = { ...user, isChild: true, childName: 'kid' };
    session.setLogin('tok', kid);
    prefsServer();
    renderApp('/console/account?tab=notices');
    expect(await screen.findByText('消息通知', { selector: '.ant-tabs-tab-btn' })).toBeTruthy();
    expect(await rowOf('有卡通知')).toBeTruthy();
  });
});
