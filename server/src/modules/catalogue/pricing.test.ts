import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BillingCycle, MAX_DURATION, yuanToUnits } from '@console/contract';
import { applyBp, bpToRate, priceBandwidthChange, priceQuote, rateToBp, type PriceInput } from './pricing.js';

const base: PriceInput = {
  category: 'Gpu',
  productName: 'RTX 4090 × 1',
  cycle: 'Hour',
  duration: 1,
  quantity: 1,
  unitPrice: { listPrice: yuanToUnits('1.98'), discountBp: 10000 },
  dataDiskGb: 0,
  freeDataDiskGb: 50,
  dataDiskPricePerGbDay: yuanToUnits('0.007'),
};

describe('rates', () => {
  it('reads and writes discount rates exactly, refusing anything outside (0, 1]', () => {
    expect(rateToBp('0.7')).toBe(7000);
    expect(rateToBp('0.95')).toBe(9500);
    expect(rateToBp('1')).toBe(10000);
    expect(rateToBp('0.0001')).toBe(1);
    for (const bad of ['0', '1.5', '-0.5', '0.12345', 'abc', '', '.5']) expect(rateToBp(bad)).toBeNull();
    expect(bpToRate(7000)).toBe('0.7');
    expect(bpToRate(9500)).toBe('0.95');
    expect(bpToRate(10000)).toBe('1');
  });

  it('rounds a discounted amount half up to 0.0001 yuan', () => {
    expect(applyBp(15n, 5000)).toBe(8n);
    expect(applyBp(14n, 5000)).toBe(7n);
    expect(applyBp(475200n, 9500)).toBe(451440n);
  });
});

describe('priceQuote', () => {
  it('prices 2 cards of RTX 4090 for 3 days at the day rate, with the 5% day discount as its own line', () => {
    const q = priceQuote({ ...base, cycle: 'Day', duration: 3, quantity: 2, unitPrice: { listPrice: yuanToUnits('47.52'), discountBp: 9500 } });
    expect(q.listTotal).toBe(yuanToUnits('285.12'));
    expect(q.total).toBe(yuanToUnits('270.864'));
    expect(q.lines.map((l) => l.kind)).toEqual(['compute', 'cycleDiscount']);
    expect(q.discountRate).toBe('0.95');
    expect(q.unit).toBe('天');
  });

  it('labels a 0.7 month discount "seven" and a 0.5 one "five" (spec §9)', () => {
    expect(priceQuote({ ...base, cycle: 'Month', unitPrice: { listPrice: 1000000n, discountBp: 7000 } }).discountLabel).toBe('seven');
    expect(priceQuote({ ...base, cycle: 'Month', unitPrice: { listPrice: 1000000n, discountBp: 5000 } }).discountLabel).toBe('five');
    expect(priceQuote({ ...base, cycle: 'Month', unitPrice: { listPrice: 1000000n, discountBp: 8500 } }).discountLabel).toBeUndefined();
  });

  it('charges only the data disk beyond the free size, prorated by the hour and rounded up', () => {
    // 150 GB with 50 free: 100 GB × 0.007 元/GB/天 × 5 h / 24 = 0.145833… → 0.1459
    const q = priceQuote({ ...base, duration: 5, dataDiskGb: 150 });
    const disk = q.lines.find((l) => l.kind === 'dataDisk')!;
    expect(disk.amount).toBe(String(yuanToUnits('0.1459')));
    expect(q.total).toBe(yuanToUnits('9.9') + yuanToUnits('0.1459'));
    expect(priceQuote({ ...base, dataDiskGb: 50 }).lines.some((l) => l.kind === 'dataDisk')).toBe(false);
  });

  it('gives a student 10% off what is left after the cycle discount', () => {
    const q = priceQuote({ ...base, duration: 10, studentBp: 9000 });
    expect(q.total).toBe(yuanToUnits('17.82'));
    expect(q.discountTotal).toBe(yuanToUnits('1.98'));
  });

  it('takes a voucher off up to what is left to pay, and refuses it under its minimum spend', () => {
    const voucher = { id: 'v', name: '新用户 50 元券', amount: yuanToUnits('50'), minSpend: 0n };
    const small = priceQuote({ ...base, voucher });
    expect(small.voucherDeduction).toBe(yuanToUnits('1.98'));
    expect(small.total).toBe(0n);
    expect(() => priceQuote({ ...base, voucher: { ...voucher, minSpend: yuanToUnits('100') } })).toThrow(/满 100.00 元可用/);
  });
});

describe('priceQuote properties', () => {
  const input = fc.record({
    cycle: fc.constantFrom(...BillingCycle.values),
    durationSeed: fc.integer({ min: 1, max: 720 }),
    quantity: fc.integer({ min: 1, max: 20 }),
    listPrice: fc.bigInt({ min: 0n, max: 500_000_000n }),
    discountBp: fc.integer({ min: 1, max: 10000 }),
    dataDiskGb: fc.integer({ min: 0, max: 10240 }),
    freeDataDiskGb: fc.integer({ min: 0, max: 400 }),
    diskPrice: fc.bigInt({ min: 0n, max: 1000n }),
    studentBp: fc.option(fc.integer({ min: 1, max: 10000 }), { nil: undefined }),
    voucher: fc.option(fc.bigInt({ min: 0n, max: 10_000_000n }), { nil: undefined }),
  });
  const toInput = (v: typeof input extends fc.Arbitrary<infer T> ? T : never): PriceInput => ({
    ...base,
    cycle: v.cycle,
    duration: ((v.durationSeed - 1) % MAX_DURATION[v.cycle]) + 1,
    quantity: v.quantity,
    unitPrice: { listPrice: v.listPrice, discountBp: v.discountBp },
    dataDiskGb: v.dataDiskGb,
    freeDataDiskGb: v.freeDataDiskGb,
    dataDiskPricePerGbDay: v.diskPrice,
    studentBp: v.studentBp,
    voucher: v.voucher === undefined ? undefined : { id: 'v', name: '券', amount: v.voucher, minSpend: 0n },
  });

  it('the total is the sum of the lines, never negative, and no more than the list total', () => {
    fc.assert(
      fc.property(input, (v) => {
        const q = priceQuote(toInput(v));
        const sum = q.lines.reduce((n, l) => n + BigInt(l.amount), 0n);
        expect(q.total).toBe(sum);
        expect(q.total >= 0n).toBe(true);
        expect(q.total <= q.listTotal).toBe(true);
        expect(q.listTotal - q.discountTotal - q.voucherDeduction).toBe(q.total);
        for (const l of q.lines) expect(Number.isInteger(Number(l.amount))).toBe(true);
      }),
      { numRuns: 500 },
    );
  });

  it('quoting the same configuration twice gives the same answer', () => {
    fc.assert(
      fc.property(input, (v) => {
        expect(priceQuote(toInput(v))).toEqual(priceQuote(toInput(v)));
      }),
      { numRuns: 200 },
    );
  });

  it('more time never costs less', () => {
    fc.assert(
      fc.property(input, (v) => {
        const one = toInput(v);
        const longer = { ...one, duration: Math.min(one.duration + 1, MAX_DURATION[one.cycle]) };
        expect(priceQuote({ ...longer, voucher: undefined }).total >= priceQuote({ ...one, voucher: undefined }).total).toBe(true);
      }),
      { numRuns: 200 },
    );
  });
});

describe('bandwidth', () => {
  const y = yuanToUnits;
  it('prices a prepaid upgrade by the added chargeable Mbps and the whole hours left, then the student discount', () => {
    const r = priceBandwidthChange({ extraBefore: 5, extraAfter: 15, hours: 23, pricePerMbpsHour: y('0.03'), note: '按剩余 23 小时计', studentBp: 8000 });
    expect(r.listTotal).toBe(10n * y('0.03') * 23n); // ¥6.90
    expect(r.total).toBe(y('5.52'));
    expect(r.lines.map((l) => l.kind)).toEqual(['bandwidth', 'studentDiscount']);
    const down = priceBandwidthChange({ extraBefore: 15, extraAfter: 5, hours: 23, pricePerMbpsHour: y('0.03'), note: '' });
    expect(down.total).toBe(0n);
    expect(down.lines).toEqual([]);
  });

  it('renews the bandwidth beyond what the size includes for each machine and the whole cycle, without the cycle discount', () => {
    const withBw = priceQuote({ ...base, cycle: 'Day', duration: 2, quantity: 1, dataDiskGb: 0, bandwidth: { extraMbps: 5, pricePerMbpsHour: y('0.03') } });
    const without = priceQuote({ ...base, cycle: 'Day', duration: 2, quantity: 1, dataDiskGb: 0 });
    const line = withBw.lines.find((l) => l.kind === 'bandwidth')!;
    expect(line).toMatchObject({ quantity: 5, amount: String(5n * y('0.03') * 48n) });
    expect(withBw.total - without.total).toBe(5n * y('0.03') * 48n);
  });
});
