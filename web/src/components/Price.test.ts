import { describe, expect, it } from 'vitest';
import { formatUnitPrice } from './Price';

describe('formatUnitPrice', () => {
  it.each([
    ['70', '0.007'],
    ['19800', '1.98'],
    ['10000', '1.00'],
    ['12345', '1.2345'],
    ['12340', '1.234'],
    ['-500', '-0.05'],
    ['0', '0.00'],
  ])('%s units → %s', (units, text) => expect(formatUnitPrice(units)).toBe(text));
});
