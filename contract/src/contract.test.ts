import { describe, expect, it } from 'vitest';
import {
  API,
  ERRORS,
  SILENT_CODES,
  errorByCode,
  formatFilterBy,
  fenCeilText,
  fenFloorText,
  formatBeijing,
  formatYuan,
  httpStatusOf,
  isApiPath,
  isStrongPassword,
  parseFilterBy,
  parseFilterByMulti,
  roundUpToFen,
  yuanToUnits,
  gpuOrderRequestSchema,
  loginSchema,
  pagingQuerySchema,
  smsCodeRequestSchema,
} from './index.js';

describe('error catalogue', () => {
  it('has unique 8-digit codes whose first three digits are a real HTTP status', () => {
    const codes = Object.values(ERRORS).map((e) => e.code);
    expect(new Set(codes).size).toBe(codes.length);
    for (const code of codes) {
      expect(String(code)).toMatch(/^[45]\d{7}$/);
      expect([400, 401, 403, 404, 409, 413, 415, 429, 500, 502, 503]).toContain(httpStatusOf(code));
    }
  });

  it('carries the spec codes and messages', () => {
    expect(httpStatusOf(40311001)).toBe(403);
    expect(httpStatusOf(40011007)).toBe(400);
    expect(errorByCode(40311001)?.name).toBe('CERTIFICATION_REQUIRED');
    expect(errorByCode(40011007)?.message).toBe('存在未支付订单，无法创建新订单');
    expect(ERRORS.INTERNAL.message).toBe('服务器开了个小差，请稍后重试');
    expect([...SILENT_CODES].sort()).toEqual([40016010, 40016900, 40016901]);
  });
});

describe('money', () => {
  it('parses yuan into exact 0.0001 units', () => {
    expect(yuanToUnits('12')).toBe(120000n);
    expect(yuanToUnits('0.0001')).toBe(1n);
    expect(yuanToUnits('-3.5')).toBe(-35000n);
    expect(yuanToUnits('999999999999999.9999')).toBe(9999999999999999999n);
    for (const bad of ['1.00001', 'abc', '1e3', '', '0x10', '1,000']) expect(() => yuanToUnits(bad)).toThrow();
  });

  it('formats units as yuan rounded half-up to the cent', () => {
    expect(formatYuan('123456')).toBe('12.35');
    expect(formatYuan(123449n)).toBe('12.34');
    expect(formatYuan('50')).toBe('0.01');
    expect(formatYuan('49')).toBe('0.00');
    expect(formatYuan('-123456', { symbol: true })).toBe('¥-12.35');
    expect(formatYuan('-49')).toBe('0.00');
    expect(formatYuan('500000', { symbol: true })).toBe('¥50.00');
    expect(() => formatYuan('1.5')).toThrow();
  });

  it('formats unit prices as they were set and bill lines to the 0.0001 yuan', () => {
    expect(formatYuan('70', { precision: 'rate' })).toBe('0.007');
    expect(formatYuan('4900', { symbol: true, precision: 'rate' })).toBe('¥0.49');
    expect(formatYuan('12340', { precision: 'rate' })).toBe('1.234');
    expect(formatYuan('10000', { precision: 'rate' })).toBe('1.00');
    expect(formatYuan('-500', { precision: 'rate' })).toBe('-0.05');
    expect(formatYuan('4900', { precision: 'exact' })).toBe('0.4900');
    expect(formatYuan(-12345n, { symbol: true, precision: 'exact' })).toBe('¥-1.2345');
    expect(formatYuan('0', { precision: 'exact' })).toBe('0.0000');
  });

  it('rounds to whole fen the way each use needs: QR amounts up, invoiceable amounts down', () => {
    expect(roundUpToFen(123401n)).toBe(123500n);
    expect(roundUpToFen(123400n)).toBe(123400n);
    expect(roundUpToFen(1n)).toBe(100n);
    expect(fenFloorText(123499n)).toBe('12.34');
    expect(fenCeilText(123401n)).toBe('12.35');
    expect(fenFloorText(5n)).toBe('0.00');
  });
});

describe('Beijing time', () => {
  it('shows any instant as Beijing wall time, to the minute or the second', () => {
    expect(formatBeijing(new Date('2026-11-25T16:05:09Z'))).toBe('2026-11-26 00:05');
    expect(formatBeijing('2026-11-25T16:05:09.999Z', 'second')).toBe('2026-11-26 00:05:09');
  });
});

describe('filters and paths', () => {
  it('round-trips the comma-joined key,value filter string', () => {
    expect(formatFilterBy({ status: 'Running', region: 'bj', empty: '', none: undefined })).toBe('status,Running,region,bj');
    expect(parseFilterBy('status,Running,region,bj')).toEqual({ status: 'Running', region: 'bj' });
    expect(parseFilterBy(undefined)).toEqual({});
    expect(() => parseFilterBy('status')).toThrow();
  });

  it('repeats a key for several values of one filter ("any of"), both ways', () => {
    expect(formatFilterBy({ kind: ['Personal', 'default'], status: 'Paid', type: [], none: undefined })).toBe('kind,Personal,kind,default,status,Paid');
    expect(parseFilterByMulti('kind,Personal,kind,default,status,Paid,kind,Personal')).toEqual({ kind: ['Personal', 'default'], status: ['Paid'] });
    expect(parseFilterByMulti(undefined)).toEqual({});
    expect(() => parseFilterByMulti('kind,Ai,kind')).toThrow();
  });

  it('tells API paths from page paths', () => {
    expect(isApiPath(API.meInfo)).toBe(true);
    expect(isApiPath('/infra/api/v2.1/sizes?sortBy=a')).toBe(true);
    expect(isApiPath('/healthz')).toBe(false);
    expect(isApiPath('/console/gpu-generic')).toBe(false);
    expect(isApiPath('/stats/cloud/gpu')).toBe(false);
    expect(isApiPath('/docs')).toBe(true);
  });
});

describe('account schemas', () => {
  it('enforces the password strength rule', () => {
    expect(isStrongPassword('Abcd1234')).toBe(true);
    expect(isStrongPassword('abcdefgh')).toBe(false);
    expect(isStrongPassword('12345678')).toBe(false);
    expect(isStrongPassword('Ab1')).toBe(false);
    expect(isStrongPassword('Abcd 1234')).toBe(false);
  });

  it('accepts either login shape and explains bad input in Chinese', () => {
    expect(loginSchema.safeParse({ account: '13912345678', password: 'x' }).success).toBe(true);
    expect(loginSchema.safeParse({ mobile: '13912345678', code: '123456' }).success).toBe(true);
    expect(loginSchema.safeParse({ mobile: '13912345678' }).success).toBe(false);
    const bad = smsCodeRequestSchema.safeParse({ mobile: '123', scene: 'register' });
    expect(bad.success).toBe(false);
    expect(bad.error!.issues[0]!.message).toBe('请输入正确的 11 位手机号');
  });
});

describe('number fields', () => {
  const order = { gpuTypeId: 'rtx3090', cycle: 'Day', duration: 1 };
  it('take a JSON number or a plain decimal string, nothing that merely converts to one', () => {
    expect(gpuOrderRequestSchema.parse({ ...order, gpuCount: 2 }).gpuCount).toBe(2);
    expect(gpuOrderRequestSchema.parse({ ...order, gpuCount: '2' }).gpuCount).toBe(2);
    for (const bad of [true, [2], '0x1', '1e0', '', ' ', null, {}]) {
      const r = gpuOrderRequestSchema.safeParse({ ...order, gpuCount: bad });
      expect(r.success, JSON.stringify(bad)).toBe(false);
      expect(r.error!.issues[0]!.path).toEqual(['gpuCount']);
    }
    expect(gpuOrderRequestSchema.safeParse({ ...order, gpuCount: 1, duration: true }).success).toBe(false);
  });

  it('keep their defaults when absent (paging from a query string)', () => {
    expect(pagingQuerySchema.parse({})).toEqual({ page: 1, pageSize: 10 });
    expect(pagingQuerySchema.parse({ page: '3', pageSize: '20' })).toEqual({ page: 3, pageSize: 20 });
    expect(pagingQuerySchema.safeParse({ page: '1e1' }).success).toBe(false);
  });
});
