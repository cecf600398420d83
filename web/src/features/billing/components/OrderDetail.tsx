import { useState } from 'react';
import { Alert, Button, Card, Col, Descriptions, Flex, Result, Row, Skeleton, Space, Steps, Table, Tag, Typography } from 'antd';
import { ArrowLeftOutlined } from '@ant-design/icons';
import { useQuery } from '@tanstack/react-query';
import { Link, Navigate, useParams, useSearchParams } from 'react-router';
import { OrderType, PAGE, PaymentMethod, formatYuan, type Order, type OrderKind, type UsageLine } from '@console/contract';
import { isApiError } from '../../../api/errors';
import { ORDER_KEYS, ordersApi, orderQueries } from '../../../api/orders';
import { LoadError } from '../../../components/LoadError';
import { OrderPayModal } from '../../../components/OrderPayModal';
import {
  balancePaid,
  formatCountdown,
  formatTime,
  orderDetailPath,
  orderProductLabel,
  OrderStatusTag,
  paySourceLabel,
  useCancelOrder,
  useSecondsLeft,
} from '../../../components/orderViews';
import { PageFrame } from '../../../components/PageFrame';

const KINDS: readonly OrderKind[] = ['Personal', 'default', 'Ai'];

/** A missing order, someone else's, or an id that is not an order number at all: all "not found". */
function isNotFound(e: unknown): boolean {
  return isApiError(e) && (e.status === 404 || e.status === 400);
}

/**
 * The order behind a bill link. The kind decides the path; links from the bill list carry it
 * (?kind=), links from the ledger do not, so the kinds are tried in turn.
 */
function useOrderLookup(uid: string, preferred: readonly OrderKind[]) {
  return useQuery({
    queryKey: ORDER_KEYS.lookup(uid, preferred),
    queryFn: async ({ signal }): Promise<Order | null> => {
      for (const kind of preferred) {
        try {
          return await ordersApi.get(kind, uid, signal);
        } catch (e) {
          if (!isNotFound(e)) throw e;
        }
      }
      return null;
    },
  });
}

/** Shared by 服务器账单详情 and 模型账单详情: one order, its progress, its price and how it was paid. */
export function OrderDetailPage({ area }: { area: 'server' | 'model' }) {
  const { id = '' } = useParams();
  const [params] = useSearchParams();
  const asked = params.get('kind');
  const first: OrderKind[] = area === 'model' ? ['Ai'] : KINDS.includes(asked as OrderKind) ? [asked as OrderKind] : ['Personal', 'default'];
  const order = useOrderLookup(id, [...first, ...KINDS.filter((k) => !first.includes(k))]);
  const backTo = area === 'model' ? `${PAGE.bill}?tab=model` : PAGE.bill;
  const back = (
    <Link to={backTo}>
      <Button icon={<ArrowLeftOutlined />}>返回账单</Button>
    </Link>
  );

  if (order.data && (order.data.kind === 'Ai') !== (area === 'model')) {
    // A ledger link to an order of the other area: show it where it belongs.
    return <Navigate to={orderDetailPath(order.data)} replace />;
  }

  return (
    <PageFrame extra={back}>
      {order.isPending ? (
        <Card>
          <Skeleton active paragraph={{ rows: 8 }} />
        </Card>
      ) : order.isError ? (
        <Card>
          <LoadError error={order.error} onRetry={() => void order.refetch()} />
        </Card>
      ) : order.data === null ? (
        <Card>
          <Result
            status="404"
            title="订单不存在"
            subTitle={`没有找到订单 ${id}，它可能不属于当前账号，或订单号有误。`}
            extra={
              <Link to={backTo}>
                <Button type="primary">返回账单</Button>
              </Link>
            }
          />
        </Card>
      ) : (
        <OrderDetailBody order={order.data} onChanged={() => void order.refetch()} />
      )}
    </PageFrame>
  );
}

function OrderDetailBody({ order, onChanged }: { order: Order; onChanged: () => void }) {
  const [paying, setPaying] = useState(false);
  const cancel = useCancelOrder(onChanged);
  const left = useSecondsLeft(order.status === 'Unpaid' ? order.expiresAt : null);
  const unpaid = order.status === 'Unpaid' && left > 0;

  return (
    <Flex vertical gap={16}>
      <Card>
        <Flex justify="space-between" align="flex-start" gap={24} wrap>
          <Flex vertical gap={6} style={{ minWidth: 0 }}>
            <Space size={10} align="center">
              <Typography.Title level={5} style={{ margin: 0 }}>
                {order.description}
              </Typography.Title>
              <OrderStatusTag status={order.status} />
            </Space>
            <Typography.Text type="secondary">
              订单号{' '}
              <Typography.Text copyable={{ text: order.orderUid, tooltips: ['复制', '已复制'] }} className="mono">
                {order.orderUid}
              </Typography.Text>
            </Typography.Text>
          </Flex>
          <Flex vertical align="flex-end" gap={2}>
            <Typography.Text type="secondary">订单金额</Typography.Text>
            <span className="price price-xl">
              <span className="price-symbol">¥</span>
              {formatYuan(order.amount)}
            </span>
          </Flex>
        </Flex>

        {unpaid && (
          <Alert
            type="warning"
            showIcon
            style={{ marginTop: 16 }}
            title={`订单待支付，请在 ${formatCountdown(left)} 内完成支付，超时订单将自动关闭`}
            action={
              <Space>
                <Button type="primary" onClick={() => setPaying(true)}>
                  去支付
                </Button>
                <Button danger loading={cancel.isPending} onClick={() => cancel.confirm(order)}>
                  取消订单
                </Button>
              </Space>
            }
          />
        )}
        {order.failReason && (
          <Alert
            type="error"
            showIcon
            style={{ marginTop: 16 }}
            title="订单处理失败"
            description={`原因：${order.failReason}${order.status === 'Refunded' ? '。已支付的代金券、赠送金和现金已原路退回。' : ''}`}
          />
        )}

        <OrderSteps order={order} secondsLeft={left} />
      </Card>

      <Row gutter={[16, 16]}>
        <Col xs={24} xl={14}>
          <Card title="订单信息" style={{ height: '100%' }}>
            <Descriptions
              column={{ xs: 1, md: 2 }}
              size="small"
              items={[
                { key: 'product', label: '产品', children: orderProductLabel(order) },
                { key: 'type', label: '订单类型', children: OrderType.label(order.type) },
                { key: 'created', label: '下单时间', children: formatTime(order.createdAt) },
                order.status === 'Unpaid'
                  ? { key: 'expires', label: '支付截止', children: formatTime(order.expiresAt) }
                  : { key: 'method', label: '支付方式', children: order.payMethod ? PaymentMethod.label(order.payMethod) : '--' },
                { key: 'paid', label: '支付时间', children: formatTime(order.paidAt) },
                {
                  key: 'fulfilled',
                  label: order.type === 'Usage' ? '完成时间（释放）' : '完成时间',
                  children: order.type === 'Usage' && order.status === 'Time' ? '计费中' : formatTime(order.fulfilledAt),
                },
                ...(order.refundedAt ? [{ key: 'refunded', label: '退款时间', children: formatTime(order.refundedAt) }] : []),
                ...(order.resourceId
                  ? [
                      {
                        key: 'resource',
                        label: order.kind === 'Ai' ? '资源包' : '资源 ID',
                        children: order.kind === 'Ai' ? <Link to={PAGE.resource}>在“资源包”中查看</Link> : <span className="mono">{order.resourceId}</span>,
                      },
                    ]
                  : []),
              ]}
            />
          </Card>
        </Col>
        <Col xs={24} xl={10}>
          <PriceCard order={order} />
        </Col>
      </Row>
      {order.type === 'Usage' && <UsageBillCard order={order} />}
      {paying && (
        <OrderPayModal
          order={order}
          onClose={() => {
            setPaying(false);
            onChanged();
          }}
        />
      )}
    </Flex>
  );
}

function PriceCard({ order }: { order: Order }) {
  // A post-paid order's quote is the price of one hour when it was bought, not what it charged: its lines are the bill below.
  const lines = order.type === 'Usage' ? [] : order.quote.lines;
  const voucherInQuote = lines.some((l) => l.kind === 'voucher');
  const deduction = BigInt(order.voucherDeduction);
  const net = BigInt(order.amount) - (voucherInQuote ? 0n : deduction);
  return (
    <Card title="费用明细" style={{ height: '100%' }}>
      {order.type === 'Usage' && (
        <Typography.Paragraph type="secondary" style={{ marginBottom: 8 }}>
          按量计费：按实际运行时长扣费，逐段明细见下方「计费明细」。
        </Typography.Paragraph>
      )}
      <ul className="quote-lines" aria-label="费用明细">
        {lines.map((l, i) => (
          <li key={i}>
            <span className="quote-line-name">{l.name}</span>
            <span className={`quote-line-amount${l.amount.startsWith('-') ? ' is-deduction' : ''}`}>
              {l.amount.startsWith('-') ? `-¥${formatYuan(l.amount.slice(1))}` : `¥${formatYuan(l.amount)}`}
            </span>
          </li>
        ))}
        {deduction > 0n && !voucherInQuote && (
          <li>
            <span className="quote-line-name">代金券抵扣</span>
            <span className="quote-line-amount is-deduction">-¥{formatYuan(deduction)}</span>
          </li>
        )}
      </ul>
      <div className="quote-total">
        <Typography.Text>{order.paidAt ? '实付' : '应付'}</Typography.Text>
        <span className="price price-lg">
          <span className="price-symbol">¥</span>
          {formatYuan(net)}
        </span>
      </div>

      <Typography.Text strong style={{ display: 'block', margin: '20px 0 8px' }}>
        支付构成
      </Typography.Text>
      {order.paid.length === 0 ? (
        <Typography.Text type="secondary">{order.status === 'Unpaid' ? '尚未支付' : '未发生扣款'}</Typography.Text>
      ) : (
        <ul className="quote-lines" aria-label="支付构成">
          {(['voucher', 'gift', 'cash'] as const).map((source) => {
            const sum = order.paid.filter((p) => p.source === source).reduce((n, p) => n + BigInt(p.amount), 0n);
            return (
              <li key={source}>
                <span className="quote-line-name">{paySourceLabel(source, order.payMethod)}</span>
                <span className="quote-line-amount">¥{formatYuan(sum)}</span>
              </li>
            );
          })}
          <li className="pay-parts-total">
            <span className="quote-line-name">实付合计（不含代金券）</span>
            <span className="quote-line-amount">¥{formatYuan(balancePaid(order))}</span>
          </li>
        </ul>
      )}
      {order.status === 'Refunded' && (
        <Typography.Text type="secondary" style={{ fontSize: 12 }}>
          以上款项已于 {formatTime(order.refundedAt)} 原路退回。
        </Typography.Text>
      )}
    </Card>
  );
}

function OrderSteps({ order, secondsLeft }: { order: Order; secondsLeft: number }) {
  const items = stepsOf(order, secondsLeft);
  const active = Math.max(
    0,
    items.findIndex((i) => i.status === 'process' || i.status === 'error'),
  );
  return <Steps className="order-steps" size="small" current={active || items.length - 1} items={items} />;
}

type Step = { title: string; content?: string; status: 'wait' | 'process' | 'finish' | 'error' };

/** The order's way through the state machine, with the times it reached each step. */
function stepsOf(order: Order, secondsLeft: number): Step[] {
  const steps: Step[] = [{ title: '提交订单', content: formatTime(order.createdAt), status: 'finish' }];
  const paid: Step = { title: '支付成功', content: formatTime(order.paidAt), status: 'finish' };
  switch (order.status) {
    case 'Unpaid':
      return [
        ...steps,
        { title: '待支付', content: secondsLeft > 0 ? `剩余 ${formatCountdown(secondsLeft)}` : '已超时', status: 'process' },
        { title: '开通完成', status: 'wait' },
      ];
    case 'Cancelled':
      return [...steps, { title: '已取消', status: 'error' }];
    case 'Expired':
      return [...steps, { title: '已过期', content: `超过支付截止 ${formatTime(order.expiresAt)}`, status: 'error' }];
    case 'Abated':
      return [...steps, { title: '已失效', status: 'error' }];
    case 'Paid':
      return [...steps, paid, { title: '开通中', status: 'process' }];
    case 'Time':
      return [...steps, paid, { title: '计费中', status: 'process' }];
    case 'Success':
      return [...steps, paid, { title: '已完成', content: formatTime(order.fulfilledAt), status: 'finish' }];
    case 'Failed':
      return [...steps, paid, { title: '处理失败', status: 'error' }, { title: '退款', status: 'process' }];
    case 'Refunded':
      return [
        ...steps,
        ...(order.paidAt ? [paid] : []),
        order.fulfilledAt
          ? { title: '已完成', content: formatTime(order.fulfilledAt), status: 'finish' as const }
          : { title: '处理失败', status: 'error' as const },
        { title: '已退款', content: formatTime(order.refundedAt), status: 'finish' },
      ];
  }
}

/** "25 秒", "12 分 13 秒", "1 小时 0 分 5 秒". */
function durationText(seconds: number): string {
  const h = Math.floor(seconds / 3600);
  const m = Math.floor((seconds % 3600) / 60);
  const sec = seconds % 60;
  if (h > 0) return `${h} 小时 ${m} 分 ${sec} 秒`;
  return m > 0 ? `${m} 分 ${sec} 秒` : `${sec} 秒`;
}

/** Money to the 0.0001 yuan the ledger keeps: the lines of a post-paid bill add up to its total exactly. */
function exactYuan(units: string): string {
  // The minus before the symbol, as the order's other lines write deductions.
  return units.startsWith('-') ? `-¥${formatYuan(units.slice(1), { precision: 'exact' })}` : formatYuan(units, { symbol: true, precision: 'exact' });
}

/**
 * 计费明细 of a post-paid order: each run segment (GPU time, no-card time, with its bandwidth), the
 * data-disk hours and arrears paid later, each with what the ledger took; the total is what was taken.
 */
function UsageBillCard({ order }: { order: Order }) {
  const bill = useQuery(orderQueries.usage(order));
  return (
    <Card title="计费明细" extra={bill.data?.billing ? <Tag color="purple">计费中</Tag> : null}>
      {bill.isError ? (
        <LoadError error={bill.error} onRetry={() => void bill.refetch()} />
      ) : (
        <Table<UsageLine>
          aria-label="计费明细"
          size="small"
          loading={bill.isPending}
          dataSource={bill.data?.lines}
          rowKey={(l) => `${l.kind}:${l.resource}:${l.start ?? ''}:${l.detail}`}
          pagination={false}
          scroll={{ x: 880 }}
          locale={{ emptyText: '尚未产生费用' }}
          columns={[
            {
              title: '费用项',
              key: 'item',
              render: (_, l) => (
                <Flex vertical>
                  <span>
                    {l.label}
                    {l.resource && <Typography.Text type="secondary">（{l.resource}）</Typography.Text>}
                  </span>
                  {l.detail && (
                    <Typography.Text type="secondary" style={{ fontSize: 12 }}>
                      {l.detail}
                    </Typography.Text>
                  )}
                </Flex>
              ),
            },
            { title: '开始', dataIndex: 'start', width: 170, render: (v: string | null) => formatTime(v) },
            { title: '结束', dataIndex: 'end', width: 170, render: (v: string | null) => formatTime(v) },
            { title: '时长', dataIndex: 'seconds', width: 130, render: (v: number | null) => (v === null ? '--' : durationText(v)) },
            {
              title: '单价',
              key: 'rate',
              width: 110,
              align: 'right',
              render: (_, l) => (l.rate === null ? '--' : `¥${formatYuan(l.rate)}/${l.rateUnit}`),
            },
            { title: '金额', dataIndex: 'amount', width: 110, align: 'right', render: (v: string) => <span className="amount-cell">{exactYuan(v)}</span> },
          ]}
          summary={() =>
            bill.data ? (
              <Table.Summary.Row>
                <Table.Summary.Cell index={0} colSpan={5}>
                  <Typography.Text strong>合计（实扣）</Typography.Text>
                </Table.Summary.Cell>
                <Table.Summary.Cell index={5} align="right">
                  <Typography.Text strong className="amount-cell" data-testid="usage-total">
                    {exactYuan(bill.data.total)}
                  </Typography.Text>
                </Table.Summary.Cell>
              </Table.Summary.Row>
            ) : null
          }
        />
      )}
    </Card>
  );
}
