import type { ReactNode } from 'react';
import { Alert, Button, Card, Empty, Skeleton, Tag, Typography } from 'antd';
import type { UseQueryResult } from '@tanstack/react-query';
import { discountText, formatYuan, type ErrorName, type Quote } from '@console/contract';
import { isApiError } from '../../../api/errors';
import { Price } from '../../../components/Price';
import { QuoteLines } from '../../../components/QuoteLines';

export interface SummaryItem {
  label: string;
  value: ReactNode;
}

/** Conflicts the buyer can fix by changing the configuration read as warnings, the rest as errors. */
const FIXABLE: ErrorName[] = ['NO_CAPACITY', 'CATALOGUE_ITEM_NOT_FOUND', 'IMAGE_INCOMPATIBLE', 'VOUCHER_UNUSABLE'];

function QuoteError({ error, onRetry }: { error: unknown; onRetry: () => void }) {
  const fixable = isApiError(error, ...FIXABLE);
  const message = error instanceof Error ? error.message : '询价失败，请稍后重试';
  const detail = isApiError(error) ? error.detail : undefined;
  return (
    <Alert
      type={fixable ? 'warning' : 'error'}
      showIcon
      role="alert"
      title={message}
      description={detail}
      action={
        fixable ? undefined : (
          <Button size="small" onClick={onRetry}>
            重试
          </Button>
        )
      }
    />
  );
}

/** The server's lines as they are (deductions are negative lines), then the total. */
function QuoteBody({ quote, prepaid }: { quote: Quote; prepaid: boolean }) {
  const discount = discountText(quote.discountRate);
  const saved = BigInt(quote.listTotal) - BigInt(quote.total);
  return (
    <>
      <QuoteLines lines={quote.lines} calc />
      <div className="quote-total">
        <Typography.Text strong>
          {prepaid ? '合计' : '预估费用'} {discount && <Tag color="volcano">{discount}</Tag>}
        </Typography.Text>
        <span aria-label="合计金额" data-testid="quote-total">
          <Price units={quote.total} size="xl" />
        </span>
      </div>
      {saved > 0n && (
        <div className="quote-saved">
          原价 <Price units={quote.listTotal} size="sm" strike />
          ，已优惠 ¥{formatYuan(saved)}
        </div>
      )}
      <Typography.Paragraph type="secondary" style={{ fontSize: 12, margin: '8px 0 0' }}>
        {prepaid
          ? `共 ${quote.duration} ${quote.unit}，下单时从余额一次性扣费。`
          : `按 ${quote.duration} ${quote.unit}估算；按时计费为后付费，开机期间按秒计费，从余额扣费。`}
      </Typography.Paragraph>
    </>
  );
}

/** The price side of the purchase page: what is bought, the server's quote, and the buy button. */
export function QuotePanel({
  summary,
  query,
  ready,
  settling,
  prepaid,
  loggedIn,
  onBuy,
}: {
  summary: SummaryItem[];
  query: UseQueryResult<Quote>;
  /** The configuration is complete enough to ask for a price. */
  ready: boolean;
  settling: boolean;
  prepaid: boolean;
  loggedIn: boolean;
  onBuy: (quote: Quote) => void;
}) {
  const quote = ready && !query.isError ? query.data : undefined;
  return (
    <Card title="配置费用" className="purchase-summary" aria-label="配置费用">
      <dl className="gpu-card-specs" style={{ borderTop: 'none', paddingTop: 0, marginBottom: 12 }}>
        {summary.map((item) => (
          <SummaryRow key={item.label} item={item} />
        ))}
      </dl>
      {!ready ? (
        <Empty image={Empty.PRESENTED_IMAGE_SIMPLE} description="选择配置后显示价格" />
      ) : query.isError ? (
        <QuoteError error={query.error} onRetry={() => void query.refetch()} />
      ) : quote ? (
        <div style={{ opacity: settling ? 0.6 : 1, transition: 'opacity 0.2s' }} aria-busy={settling}>
          <QuoteBody quote={quote} prepaid={prepaid} />
        </div>
      ) : (
        <Skeleton active paragraph={{ rows: 3 }} />
      )}
      <Button type="primary" size="large" block style={{ marginTop: 16 }} disabled={!quote || settling} onClick={() => quote && onBuy(quote)}>
        立即购买
      </Button>
      {!loggedIn && (
        <Typography.Paragraph type="secondary" style={{ fontSize: 12, margin: '8px 0 0', textAlign: 'center' }}>
          登录后即可下单，当前配置会为您保留
        </Typography.Paragraph>
      )}
    </Card>
  );
}

function SummaryRow({ item }: { item: SummaryItem }) {
  return (
    <>
      <dt>{item.label}</dt>
      <dd>{item.value}</dd>
    </>
  );
}
