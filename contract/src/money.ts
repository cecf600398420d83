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

export function unitsFromJson(value: string | bigint | number): bigint {
  if (typeof value === 'bigint') return value;
  if (typeof value === 'number') {
    if (!Number.isSafeInteger(value)) throw new RangeError(`金额必须是整数单位：${value}`);
    return BigInt(value);
  }
  if (!/^-?\d+$/.test(value)) throw new RangeError(`金额必须是整数单位：${value}`);
  return BigInt(value);
}

/**
 * Formats units as yuan rounded half-up (away from zero) to 0.01, the precision a page shows:
 * 123456 → "12.35".
 */
export function formatYuan(value: string | bigint | number, opts: { symbol?: boolean } = {}): string {
  const units = unitsFromJson(value);
  const negative = units < 0n;
  const abs = negative ? -units : units;
  const cents = (abs + 50n) / 100n;
  const text = `${cents / 100n}.${(cents % 100n).toString().padStart(2, '0')}`;
  const withSign = negative && cents !== 0n ? `-${text}` : text;
  return opts.symbol ? `¥${withSign}` : withSign;
}
