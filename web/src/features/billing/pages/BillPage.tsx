import { useState } from 'react';
import { App, Button, Card, Empty, Flex, Segmented, Select, Space, Tabs, Typography } from 'antd';
import { DownloadOutlined } from '@ant-design/icons';
import { Link } from 'react-router';
import { OrderStatus, OrderType, PAGE, formatYuan, type Order, type OrderStatus as Status, type OrderType as Type } from '@console/contract';
import { downloadOrdersCsv, ORDER_KEYS, ordersApi, type OrderFilter } from '../../../api/orders';
import { OrderPayModal } from '../../../components/OrderPayModal';
import { balancePaid, formatTime, orderProductLabel, orderDetailPath, OrderStatusTag, paidViaLabel, useCancelOrder } from '../../../components/orderViews';
import { PagedTable, RefreshButton, usePagedQuery } from '../../../components/PagedTable';
import { PageFrame } from '../../../components/PageFrame';
import { UnpaidOrderBanner } from '../../../components/UnpaidOrderBanner';
import { readPaging, writePaging, type Paging } from '../../../routing/useUrlPaging';
import { useUrlState } from '../../../routing/useUrlState';
import { ModelDayBillList } from '../components/ModelDayBillList';

/** `usage`: the model calls' daily bills (the model service charges by the token, without orders). */
type Tab = 'server' | 'storage' | 'model' | 'usage';
/**
 * Server bills are of two order kinds: GPU instances and image applications, and the other
 * instances. 全部 lists both at once (the filter repeats its key: kind,Personal,kind,default).
 */
type ServerKind = 'all' | 'Personal' | 'default';

interface BillQuery extends Paging {
  tab: Tab;
  kind: ServerKind;
  /** Any of these statuses / types; empty is all. */
  status: Status[];
  type: Type[];
}

function readQuery(p: URLSearchParams): BillQuery {
  const tab = p.get('tab');
  const kind = p.get('kind');
  return {
    tab: tab === 'storage' || tab === 'model' || tab === 'usage' ? tab : 'server',
    kind: kind === 'default' || kind === 'Personal' ? kind : 'all',
    status: known(p.getAll('status'), OrderStatus.values),
    type: known(p.getAll('type'), OrderType.values),
    ...readPaging(p),
  };
}

function writeQuery(q: BillQuery): URLSearchParams {
  const p = new URLSearchParams();
  if (q.tab !== 'server') p.set('tab', q.tab);
  if (q.tab === 'server' && q.kind !== 'all') p.set('kind', q.kind);
  q.status.forEach((s) => p.append('status', s));
  q.type.forEach((t) => p.append('type', t));
  return writePaging(q, p);
}

/** The values of a repeated URL parameter that are known, each once, in the enum's order. */
function known<T extends string>(raw: string[], values: readonly T[]): T[] {
  return values.filter((v) => raw.includes(v));
}

function filterOf(q: BillQuery): OrderFilter {
  const kind = q.tab === 'model' ? 'Ai' : q.kind === 'all' ? (['Personal', 'default'] as const) : q.kind;
  return { kind, status: q.status, type: q.type };
}

/** /console/cost/bill: the account's orders, by product, with server paging and filters in the URL. */
export default function BillPage() {
  const url = useUrlState(readQuery, writeQuery);
  const q = url.value;
  const set = (patch: Partial<BillQuery>) => url.set({ ...url.latest(), page: 1, ...patch });

  return (
    <PageFrame>
      <UnpaidOrderBanner />
      <Card className="bill-card">
        <Tabs
          activeKey={q.tab}
          onChange={(tab) => set({ tab: tab as Tab, status: [], type: [] })}
          items={[
            { key: 'server', label: '服务器账单' },
            { key: 'storage', label: '存储账单' },
            { key: 'model', label: '模型账单' },
            { key: 'usage', label: '模型调用账单' },
          ]}
        />
        {q.tab === 'storage' ? <StorageBills /> : q.tab === 'usage' ? <ModelDayBillList /> : <OrderBills query={q} onChange={set} />}
      </Card>
    </PageFrame>
  );
}

function OrderBills({ query: q, onChange }: { query: BillQuery; onChange: (patch: Partial<BillQuery>) => void }) {
  const filter = filterOf(q);
  const list = usePagedQuery({
    queryKey: ORDER_KEYS.list(filter, q.page, q.pageSize),
    queryFn: (signal) => ordersApi.list({ filter, page: q.page, pageSize: q.pageSize }, signal),
  });
  const [paying, setPaying] = useState<Order | null>(null);
  const cancel = useCancelOrder();
  const { message } = App.useApp();
  const [exporting, setExporting] = useState(false);
  const filtered = q.status.length > 0 || q.type.length > 0;

  const exportCsv = async () => {
    setExporting(true);
    try {
      await downloadOrdersCsv(filter);
      void message.success('账单已导出');
    } catch {
      // The request layer has said why.
    } finally {
      setExporting(false);
    }
  };

  return (
    <Flex vertical gap={16}>
      <Flex justify="space-between" align="center" wrap gap={12}>
        <Space wrap size={12}>
          {q.tab === 'server' && (
            <Segmented<ServerKind>
              aria-label="实例类型"
              value={q.kind}
              onChange={(kind) => onChange({ kind })}
              options={[
                { value: 'all', label: '全部' },
                { value: 'Personal', label: 'GPU 实例 / 镜像应用' },
                { value: 'default', label: 'CPU 实例 / 云桌面 / 跨境电商 / 云游戏' },
              ]}
            />
          )}
          <Select<Status[]>
            aria-label="订单状态"
            placeholder="全部状态"
            mode="multiple"
            maxTagCount="responsive"
            allowClear
            style={{ width: 200 }}
            value={q.status}
            onChange={(status) => onChange({ status })}
            options={OrderStatus.values.map((s) => ({ value: s, label: OrderStatus.label(s) }))}
          />
          <Select<Type[]>
            aria-label="订单类型"
            placeholder="全部类型"
            mode="multiple"
            maxTagCount="responsive"
            allowClear
            style={{ width: 220 }}
            value={q.type}
            onChange={(type) => onChange({ type })}
            options={OrderType.values.map((t) => ({ value: t, label: OrderType.label(t) }))}
          />
          {filtered && (
            <Button type="link" onClick={() => onChange({ status: [], type: [] })} style={{ paddingInline: 4 }}>
              清除筛选
            </Button>
          )}
        </Space>
        <Space>
          <RefreshButton list={list} />
          <Button icon={<DownloadOutlined />} onClick={() => void exportCsv()} loading={exporting}>
            导出 CSV
          </Button>
        </Space>
      </Flex>

      <PagedTable<Order>
        list={list}
        paging={q}
        onPage={onChange}
        totalNote="金额单位：元"
        empty={<EmptyBills tab={q.tab} filtered={filtered} />}
        rowKey="orderUid"
        scroll={{ x: 1080 }}
        columns={[
          {
            title: '产品 / 订单号',
            dataIndex: 'description',
            render: (d: string, o) => (
              <Flex vertical gap={2} style={{ minWidth: 0 }}>
                <Link to={orderDetailPath(o)} className="bill-product">
                  <Typography.Text ellipsis={{ tooltip: d }} style={{ color: 'inherit', maxWidth: '100%' }}>
                    {d}
                  </Typography.Text>
                </Link>
                <Typography.Text type="secondary" style={{ fontSize: 12 }}>
                  <span className="mono">{o.orderUid}</span> · {orderProductLabel(o)} · {OrderType.label(o.type)}
                </Typography.Text>
              </Flex>
            ),
          },
          { title: '状态', dataIndex: 'status', width: 90, render: (s: Status) => <OrderStatusTag status={s} /> },
          { title: '订单金额', dataIndex: 'amount', width: 100, align: 'right', render: (v: string) => <span className="amount-cell">{formatYuan(v)}</span> },
          {
            title: '代金券抵扣',
            dataIndex: 'voucherDeduction',
            width: 112,
            align: 'right',
            render: (v: string) => <span className="amount-cell">{v === '0' ? '--' : `-${formatYuan(v)}`}</span>,
          },
          {
            title: '实付',
            key: 'paid',
            width: 110,
            align: 'right',
            render: (_, o) =>
              o.paidAt ? (
                <Flex vertical align="flex-end">
                  <span className="amount-cell">{formatYuan(balancePaid(o))}</span>
                  <Typography.Text type="secondary" style={{ fontSize: 12 }}>
                    {paidViaLabel(o)}
                  </Typography.Text>
                </Flex>
              ) : (
                <span className="amount-cell">--</span>
              ),
          },
          { title: '下单时间', dataIndex: 'createdAt', width: 180, render: (v: string) => formatTime(v) },
          {
            title: '操作',
            key: 'op',
            width: 180,
            render: (_, o) => (
              <Space size={0} className="bill-ops">
                <Link to={orderDetailPath(o)} className="bill-op-link">
                  详情
                </Link>
                {o.status === 'Unpaid' && (
                  <>
                    <Button type="link" size="small" onClick={() => setPaying(o)}>
                      去支付
                    </Button>
                    <Button type="link" size="small" danger onClick={() => cancel.confirm(o)}>
                      取消订单
                    </Button>
                  </>
                )}
              </Space>
            ),
          },
        ]}
      />
      {paying && <OrderPayModal order={paying} onClose={() => setPaying(null)} />}
    </Flex>
  );
}

/** What an empty bill list is missing, and where the first bill comes from. */
function EmptyBills({ tab, filtered }: { tab: Tab; filtered: boolean }) {
  const description = filtered ? (
    '没有符合筛选条件的账单'
  ) : tab === 'model' ? (
    <span>
      暂无模型账单，<Link to={PAGE.resource}>去购买资源包</Link>
    </span>
  ) : (
    <span>
      暂无服务器账单，<Link to={PAGE.cloudGpu}>去租用 GPU</Link>
    </span>
  );
  return <Empty image={Empty.PRESENTED_IMAGE_SIMPLE} description={description} />;
}

/** No storage is billed yet: say where data-disk charges will appear, without made-up rows. */
function StorageBills() {
  return (
    <Empty
      className="bill-empty"
      image={Empty.PRESENTED_IMAGE_SIMPLE}
      description={
        <Flex vertical gap={4} align="center">
          <Typography.Text>暂无存储账单</Typography.Text>
          <Typography.Text type="secondary">数据盘扩容、超出免费容量的数据盘等存储费用产生后，会按日汇总显示在这里。</Typography.Text>
        </Flex>
      }
    >
      <Link to={PAGE.storageBillDetail}>
        <Button>查看存储账单明细</Button>
      </Link>
    </Empty>
  );
}
