/**
 * The one price function: what a quote shows is what an order charges. Pure integer arithmetic in
 * 0.0001-yuan units; rates are basis points (10000 = 1, 7000 = 0.7). No I/O here.
 */
import { AppError } from '../../http/errors.js';
import { BillingCycleUnit, DiscountLabel, formatYuan, type BillingCycle, type InstanceCategory, type QuoteLine } from '@console/contract';

export const BP = 10000n;

/** Hours one cycle unit stands for (a month is 30 days), used to prorate the data disk. */
export const HOURS_PER_UNIT: Record<BillingCycle, bigint> = { Usage: 1n, Hour: 1n, Day: 24n, Week: 168n, Month: 720n };

/** "0.7" → 7000; "1" → 10000; anything outside (0, 1] or with more than 4 decimals → null. */
export function rateToBp(rate: string): number | null {
  const m = /^(0|1)(?:\.(\d{1,4}))?$/.exec(rate.trim());
  if (!m) return null;
  const bp = Number(m[1]) * 10000 + Number((m[2] ?? '').padEnd(4, '0'));
  return bp > 0 && bp <= 10000 ? bp : null;
}

/** 7000 → "0.7"; 10000 → "1". */
export function bpToRate(bp: number): string {
  if (bp === 10000) return '1';
  return `0.${String(bp).padStart(4, '0').replace(/0+$/, '')}`;
}

/** Multiplies by a rate in basis points, rounding half up to a whole unit. */
export function applyBp(amount: bigint, bp: number): bigint {
  return (amount * BigInt(bp) + BP / 2n) / BP;
}

function ceilDiv(a: bigint, b: bigint): bigint {
  return (a + b - 1n) / b;
}

export interface UnitPrice {
  listPrice: bigint;
  discountBp: number;
}

/** What one cycle unit costs after its discount, as the market cards show it. */
export function discounted(p: UnitPrice): bigint {
  return applyBp(p.listPrice, p.discountBp);
}

export interface PriceInput {
  category: InstanceCategory;
  /** "RTX 4090 × 2" or the size's name. */
  productName: string;
  cycle: BillingCycle;
  duration: number;
  /** Cards (GPU) or instances (size). */
  quantity: number;
  unitPrice: UnitPrice;
  dataDiskGb: number;
  /** Data disk included free, in GB, for the whole order. */
  freeDataDiskGb: number;
  dataDiskPricePerGbDay: bigint;
  /** Bandwidth bought beyond what the size includes (an upgraded e-commerce machine renewing), per instance. */
  bandwidth?: { extraMbps: number; pricePerMbpsHour: bigint };
  /** Basis points of the student price, when the buyer is a verified student. */
  studentBp?: number;
  voucher?: { id: string; name: string; amount: bigint; minSpend: bigint };
}

export interface PriceResult {
  lines: QuoteLine[];
  listTotal: bigint;
  discountTotal: bigint;
  voucherDeduction: bigint;
  total: bigint;
  unit: string;
  discountRate: string;
  discountLabel?: string;
}

/**
 * Lines in order: compute at list price, data disk beyond the free size, the cycle discount, the
 * student discount, the voucher. Deductions are negative lines, so the total is their plain sum,
 * and it never goes below zero because each deduction is capped by what is left to pay.
 */
export function priceQuote(input: PriceInput): PriceResult {
  const duration = BigInt(input.duration);
  const quantity = BigInt(input.quantity);
  const lines: QuoteLine[] = [];
  const line = (kind: QuoteLine['kind'], name: string, unitPrice: bigint, qty: bigint, amount: bigint) =>
    lines.push({ kind, name, unitPrice: String(unitPrice), quantity: Number(qty), amount: String(amount) });

  const unit = BillingCycleUnit[input.cycle];
  const computeList = input.unitPrice.listPrice * quantity * duration;
  line('compute', `${input.productName}（${duration} ${unit}）`, input.unitPrice.listPrice, quantity * duration, computeList);

  const extraGb = BigInt(Math.max(0, input.dataDiskGb - input.freeDataDiskGb));
  let diskAmount = 0n;
  if (extraGb > 0n) {
    const hours = HOURS_PER_UNIT[input.cycle] * duration;
    diskAmount = ceilDiv(extraGb * input.dataDiskPricePerGbDay * hours, 24n);
    line('dataDisk', `数据盘扩容 ${extraGb} GB（超出免费 ${input.freeDataDiskGb} GB 部分）`, input.dataDiskPricePerGbDay, extraGb, diskAmount);
  }
  let bandwidthAmount = 0n;
  if (input.bandwidth && input.bandwidth.extraMbps > 0) {
    const mbps = BigInt(input.bandwidth.extraMbps) * quantity;
    bandwidthAmount = mbps * input.bandwidth.pricePerMbpsHour * HOURS_PER_UNIT[input.cycle] * duration;
    line('bandwidth', `带宽升级 +${input.bandwidth.extraMbps} Mbps（超出规格自带部分）`, input.bandwidth.pricePerMbpsHour, mbps, bandwidthAmount);
  }
  const listTotal = computeList + diskAmount + bandwidthAmount;

  const computeNet = discounted(input.unitPrice) * quantity * duration;
  const cycleDiscount = computeList - computeNet;
  if (cycleDiscount > 0n) line('cycleDiscount', `${unit}付优惠（${bpToRate(input.unitPrice.discountBp)}）`, -cycleDiscount, 1n, -cycleDiscount);

  let payable = listTotal - cycleDiscount;
  let studentDiscount = 0n;
  if (input.studentBp !== undefined && input.studentBp < 10000) {
    studentDiscount = payable - applyBp(payable, input.studentBp);
    if (studentDiscount > 0n) line('studentDiscount', `学生优惠（${bpToRate(input.studentBp)}）`, -studentDiscount, 1n, -studentDiscount);
    payable -= studentDiscount;
  }

  let voucherDeduction = 0n;
  if (input.voucher) {
    if (payable < input.voucher.minSpend) {
      throw new AppError('VOUCHER_UNUSABLE', `该券需满 ${formatYuan(input.voucher.minSpend)} 元可用，本单应付 ${formatYuan(payable)} 元`);
    }
    voucherDeduction = input.voucher.amount < payable ? input.voucher.amount : payable;
    line('voucher', `代金券：${input.voucher.name}`, -voucherDeduction, 1n, -voucherDeduction);
    payable -= voucherDeduction;
  }

  const rate = bpToRate(input.unitPrice.discountBp);
  return {
    lines,
    listTotal,
    discountTotal: cycleDiscount + studentDiscount,
    voucherDeduction,
    total: payable,
    unit,
    discountRate: rate,
    ...(DiscountLabel[rate] ? { discountLabel: DiscountLabel[rate] } : {}),
  };
}

/**
 * A change paid for the hours left (disk expansion, bandwidth upgrade): its line(s), then the
 * student discount; no cycle discount and no voucher here (one can be chosen when paying).
 */
function hourlyChange(lines: QuoteLine[], amount: bigint, studentBp: number | undefined): PriceResult {
  let total = amount;
  let studentDiscount = 0n;
  if (studentBp !== undefined && studentBp < 10000 && amount > 0n) {
    studentDiscount = amount - applyBp(amount, studentBp);
    if (studentDiscount > 0n)
      lines.push({
        kind: 'studentDiscount',
        name: `学生优惠（${bpToRate(studentBp)}）`,
        unitPrice: String(-studentDiscount),
        quantity: 1,
        amount: String(-studentDiscount),
      });
    total -= studentDiscount;
  }
  return { lines, listTotal: amount, discountTotal: studentDiscount, voucherDeduction: 0n, total, unit: BillingCycleUnit.Hour, discountRate: '1' };
}

export interface DiskExpansionInput {
  currentGb: number;
  newGb: number;
  /** Free data disk of the instance, in GB: only what lies beyond it is charged. */
  freeGb: number;
  /** Whole hours the expansion is paid for (a prepaid instance's remaining time); 0 for post-paid. */
  hours: number;
  dataDiskPricePerGbDay: bigint;
  /** What the line says after "数据盘扩容 +N GB". */
  note: string;
  studentBp?: number;
}

/**
 * Expanding a data disk: the added chargeable GB (beyond the free size) at the data-disk price,
 * prorated by the hour over the time paid for, rounded up to 0.0001 yuan, like the data-disk line
 * of a purchase; then the student discount. No voucher here: one can be chosen when paying.
 */
export function priceDiskExpansion(input: DiskExpansionInput): PriceResult {
  const chargeable = (gb: number) => BigInt(Math.max(0, gb - input.freeGb));
  const addGb = chargeable(input.newGb) - chargeable(input.currentGb);
  const amount = addGb > 0n ? ceilDiv(addGb * input.dataDiskPricePerGbDay * BigInt(input.hours), 24n) : 0n;
  const lines: QuoteLine[] = [
    {
      kind: 'dataDisk',
      name: `数据盘扩容 +${addGb} GB（${input.note}）`,
      unitPrice: String(input.dataDiskPricePerGbDay),
      quantity: Number(addGb),
      amount: String(amount),
    },
  ];
  return hourlyChange(lines, amount, input.studentBp);
}

export interface BandwidthChangeInput {
  /** Chargeable Mbps (beyond what the size includes) before and after. */
  extraBefore: number;
  extraAfter: number;
  /** Whole hours the upgrade is paid for: a prepaid instance's remaining time. */
  hours: number;
  pricePerMbpsHour: bigint;
  note: string;
  studentBp?: number;
}

/**
 * Upgrading the bandwidth of a prepaid instance: the added chargeable Mbps at the bandwidth price
 * for the whole hours left, then the student discount. A downgrade costs nothing (0).
 */
export function priceBandwidthChange(input: BandwidthChangeInput): PriceResult {
  const addMbps = BigInt(Math.max(0, input.extraAfter - input.extraBefore));
  const amount = addMbps * input.pricePerMbpsHour * BigInt(input.hours);
  // Nothing added (a downgrade, or a change paid by the hour): no line, nothing to pay.
  const lines: QuoteLine[] =
    addMbps > 0n
      ? [
          {
            kind: 'bandwidth',
            name: `带宽升级 +${addMbps} Mbps（${input.note}）`,
            unitPrice: String(input.pricePerMbpsHour),
            quantity: Number(addMbps),
            amount: String(amount),
          },
        ]
      : [];
  return hourlyChange(lines, amount, input.studentBp);
}
