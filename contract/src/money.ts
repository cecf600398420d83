/**
 * Money is an integer count of 0.0001 yuan (DESIGN.md "Money"), carried in JSON as a decimal
 * string of that integer so that no float ever touches it.
 */
export const UNITS_PER_YUAN = 10000n;

/** Parses a yuan amount written by a person ("12", "12.5", "0.0001") into units; throws on anything else. */
export function yuanToUnits(yuan: string): bigint {
  const m = /^(-)?(\d{1,15})(?:\.(\d{1,4}))?$/.exec(yuan.trim());
  if (!m) throw new RangeError(`不是有效的金额：${yuan}`);
  const [, sign, whole, frac = ''] = m;
  const units = BigInt(whole!) * UNITS_PER_YUAN + BigInt(frac.padEnd(4, '0'));
  return sign ? -units : units;
}

/** Money as JSON carries it: a decimal string of whole units. A zod-free check for pages that need no schema library. */
export function isMoneyUnits(value: unknown): value is string {
  return typeof value === 'string' && /^-?\d+$/.test(value);
}

export function unitsFromJson(value: string | bigint | number): bigint {
  if (typeof value === 'bigint') return value;
  if (typeof value === 'number') {
    if (!Number.isSafeInteger(value)) throw new RangeError(`金额必须是整数单位：${value}`);
    return BigInt(value);
  }
  if (!isMoneyUnits(value)) throw new RangeError(`金额必须是整数单位：${value}`);
  return BigInt(value);
}

/**
 * How many decimals an amount is shown with:
 * - `fen` (totals, balances): rounded half-up (away from zero) to 0.01, 123456 → "12.35";
 * - `rate` (unit prices): as the price was set, to 0.0001 with at least two decimals, 70 → "0.007",
 *   19800 → "1.98"; a per-GB or per-token rate rounded to the fen would read as another price;
 * - `exact` (a post-paid bill's lines): all four decimals the ledger keeps, so the lines add up to the
 *   total as shown, 4900 → "0.4900".
 */
export type YuanPrecision = 'fen' | 'rate' | 'exact';

/**
 * Every amount a page, a message or a memo shows goes through here. A minus shows only when the
 * shown digits are not all zero; the symbol goes first: "¥-12.35".
 */
export function formatYuan(value: string | bigint | number, opts: { symbol?: boolean; precision?: YuanPrecision } = {}): string {
  const { symbol = false, precision = 'fen' } = opts;
  const units = unitsFromJson(value);
  const abs = units < 0n ? -units : units;
  const shown = precision === 'fen' ? ((abs + 50n) / 100n) * 100n : abs;
  const text = `${shown / UNITS_PER_YUAN}.${fractionText(shown % UNITS_PER_YUAN, precision)}`;
  const signed = units < 0n && shown !== 0n ? `-${text}` : text;
  return symbol ? `¥${signed}` : signed;
}

function fractionText(fraction: bigint, precision: YuanPrecision): string {
  const digits = String(fraction).padStart(4, '0');
  if (precision === 'fen') return digits.slice(0, 2);
  return precision === 'rate' ? digits.replace(/0{1,2}$/, '') : digits;
}

/** Units per fen: payment gateways move whole fen (0.01 yuan). */
export const UNITS_PER_FEN = 100n;

/** Rounds a positive amount up to whole fen: what a gateway QR asks for (the fraction stays in the payer's cash). */
export function roundUpToFen(units: bigint): bigint {
  return ((units + UNITS_PER_FEN - 1n) / UNITS_PER_FEN) * UNITS_PER_FEN;
}

/** "12.34" for an amount rounded down to whole fen: never more than there is (invoiceable amounts). */
export function fenFloorText(units: bigint): string {
  return fenText(units / UNITS_PER_FEN);
}

/** "12.34" for an amount rounded up to whole fen: what is still missing. */
export function fenCeilText(units: bigint): string {
  return fenText((units + UNITS_PER_FEN - 1n) / UNITS_PER_FEN);
}

function fenText(fen: bigint): string {
  return `${fen / 100n}.${String(fen % 100n).padStart(2, '0')}`;
}

/** Discount rate as written on a page: "0.7" → "7 折"; "1" → "". */
export function discountText(rate: string): string {
  const n = Number(rate);
  if (!(n > 0 && n < 1)) return '';
  return `${Number((n * 10).toFixed(1))} 折`;
}
