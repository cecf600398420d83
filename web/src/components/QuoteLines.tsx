import { formatYuan, type QuoteLine } from '@console/contract';
import { formatUnitPrice } from './Price';

/** How a charged line adds up. The data disk is priced per GB and day, whatever the cycle. */
function lineCalc(line: QuoteLine): string {
  if (line.kind === 'dataDisk') return `¥${formatUnitPrice(line.unitPrice)}/GB·天 × ${line.quantity} GB`;
  return `¥${formatYuan(line.unitPrice)} × ${line.quantity}`;
}

function LineRow({ line, calc }: { line: QuoteLine; calc: boolean }) {
  const deduction = line.amount.startsWith('-');
  return (
    <li>
      <span className="quote-line-name">
        {line.name}
        {/* A deduction is one amount; "unit × quantity" only explains what is charged. */}
        {calc && !deduction && <span className="quote-line-calc">{lineCalc(line)}</span>}
      </span>
      <span className={`quote-line-amount${deduction ? ' is-deduction' : ''}`}>
        {deduction ? '-' : ''}¥{formatYuan(line.amount.replace(/^-/, ''))}
      </span>
    </li>
  );
}

/**
 * The server's quote lines as they are (deductions — cycle discount, voucher, credit — are negative
 * lines, shown in green), as the `费用明细` list. `calc` adds "unit × quantity" under each charged
 * line (the purchase page, where the lines are exactly that product).
 */
export function QuoteLines({ lines, calc = false }: { lines: readonly QuoteLine[]; calc?: boolean }) {
  return (
    <ul className="quote-lines" aria-label="费用明细">
      {lines.map((line, i) => (
        <LineRow key={`${line.kind}-${i}`} line={line} calc={calc} />
      ))}
    </ul>
  );
}
