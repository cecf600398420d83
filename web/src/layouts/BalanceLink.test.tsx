import { describe, expect, it } from 'vitest';
import { giftHint } from './BalanceLink';

describe('the gift hint of the header balance (user fields of spec §3)', () => {
  it('names the effective gift credit and its earliest expiry, and offers renewal when an item waits for it', () => {
    expect(giftHint({ remain: '70000', expireAt: '2026-12-03T08:00:00.000Z', renewStatus: true })).toBe(
      '有效赠送金 ¥7.00，最早 2026-12-03 到期；有赠送金待续期，可在「我的余额」续期',
    );
    expect(giftHint({ remain: '70000', expireAt: '2026-12-03T08:00:00.000Z', renewStatus: false })).toBe('有效赠送金 ¥7.00，最早 2026-12-03 到期');
  });

  it('says nothing without gift credit, or before me/info has answered', () => {
    expect(giftHint({ remain: '0', expireAt: null, renewStatus: false })).toBe('');
    expect(giftHint({ remain: undefined, expireAt: undefined, renewStatus: undefined })).toBe('');
    expect(giftHint(null)).toBe('');
  });
});
