import { formatYuan } from '@console/contract';

/** An amount of 0.0001-yuan units as the page shows it: ¥ and two decimals, with an optional unit. */
export function Price({ units, per, size = 'md', strike = false }: { units: string; per?: string; size?: 'sm' | 'md' | 'lg' | 'xl'; strike?: boolean }) {
  return (
    <span className={`price price-${size}${strike ? ' price-strike' : ''}`}>
      <span className="price-symbol">¥</span>
      {formatYuan(units)}
      {per && <span className="price-per">/{per}</span>}
    </span>
  );
}

/**
 * A unit price with the precision it was set in (up to 0.0001 yuan, at least two decimals):
 * 70 units → "0.007". Totals round to 0.01; a per-GB rate rounded that way would read as a
 * different price.
 */
export function formatUnitPrice(units: string): string {
  return formatYuan(units, { precision: 'rate' });
}
