import { useState } from 'react';
import { Alert, Button, Card, Col, Flex, InputNumber, Radio, Row, Skeleton, Statistic, Tag, theme, Typography } from 'antd';
import { useMutation, useQuery } from '@tanstack/react-query';
import dayjs from 'dayjs';
import { formatTime } from '../../../lib/time';
import { formatYuan, yuanToUnits, PaymentMethod, type Recharge, type RechargeOptions } from '@console/contract';
import { BILLING_KEYS, billingApi, billingQueries } from '../../../api/billing';
import { LoadError } from '../../../components/LoadError';
import { PagedTable, usePagedQuery } from '../../../components/PagedTable';
import { PageFrame } from '../../../components/PageFrame';
import { WalletOptions, type Wallet } from '../../../components/QrPayPanel';
import { useUrlPaging } from '../../../routing/useUrlPaging';
import { useMoneyQuery } from '../../../session/useSession';
import { RechargeQrModal } from '../components/RechargeQrModal';

const STATUS: Record<Recharge['status'], { text: string; color: string }> = {
  Unpaid: { text: '待支付', color: 'red' },
  Paid: { text: '已到账', color: 'green' },
  Expired: { text: '已过期', color: 'default' },
  Cancelled: { text: '已取消', color: 'default' },
};

/** Units → whole yuan as a number for the amount input (amounts are whole fen, so this is exact enough to edit). */
const unitsToInput = (units: string) => Number(formatYuan(units));

/** The bonus the server will credit: same rule (round down to 0.0001 yuan), shown before paying. */
export function bonusPreview(amountYuan: number | null, bonusRate: string): bigint {
  if (!amountYuan || !(Number(bonusRate) > 0)) return 0n;
  const amount = yuanToUnits(amountYuan.toFixed(2));
  const bp = yuanToUnits(bonusRate); // "0.18" → 1800 (0.0001 steps are basis points)
  return (amount * bp) / 10000n;
}

/** /console/recharge: choose an amount and a wallet, pay the QR code, watch it arrive. */
export default function RechargePage() {
  const options = useQuery(billingQueries.rechargeOptions());
  const [open, setOpen] = useState<Recharge | null>(null);
  return (
    <PageFrame>
      <Row gutter={[16, 16]}>
        <Col xs={24} xl={16}>
          <Card title="账户充值">
            {options.isPending ? (
              <Skeleton active />
            ) : options.isError ? (
              <LoadError error={options.error} onRetry={() => void options.refetch()} />
            ) : (
              <RechargeForm options={options.data} onCreated={setOpen} />
            )}
          </Card>
        </Col>
        <Col xs={24} xl={8}>
          <BalanceCard />
        </Col>
        <Col span={24}>
          <RechargeHistory onShow={setOpen} />
        </Col>
      </Row>
      {open && <RechargeQrModal recharge={open} onClose={() => setOpen(null)} />}
    </PageFrame>
  );
}

function RechargeForm({ options, onCreated }: { options: RechargeOptions; onCreated: (r: Recharge) => void }) {
  const [amount, setAmount] = useState<number | null>(options.presets[1] ? unitsToInput(options.presets[1]) : unitsToInput(options.min));
  const [method, setMethod] = useState<Wallet>('Alipay');
  const min = unitsToInput(options.min);
  const max = unitsToInput(options.max);
  const create = useMutation({ mutationFn: () => billingApi.createRecharge({ amount: (amount ?? 0).toFixed(2), method }), onSuccess: onCreated });
  const bonus = bonusPreview(amount, options.bonusRate);
  const valid = amount !== null && amount >= min && amount <= max;
  return (
    <Flex vertical gap={20}>
      <div>
        <Typography.Text strong>充值金额</Typography.Text>
        <Flex gap={12} wrap style={{ marginTop: 8 }}>
          {options.presets.map((p) => (
            <Button key={p} type={amount === unitsToInput(p) ? 'primary' : 'default'} onClick={() => setAmount(unitsToInput(p))} style={{ minWidth: 96 }}>
              ¥{formatYuan(p).replace(/\.00$/, '')}
            </Button>
          ))}
          <InputNumber
            aria-label="自定义金额"
            prefix="¥"
            min={min}
            max={max}
            precision={2}
            value={amount}
            onChange={(v) => setAmount(v)}
            style={{ width: 180 }}
            placeholder="自定义金额"
          />
        </Flex>
        <Typography.Paragraph type="secondary" style={{ marginTop: 8, marginBottom: 0 }}>
          单次 ¥{formatYuan(options.min)} – ¥{formatYuan(options.max)}
        </Typography.Paragraph>
      </div>
      {bonus > 0n && (
        <Alert
          type="success"
          showIcon
          title={`充值返 ${Math.round(Number(options.bonusRate) * 100)}%：本次到账后赠送 ¥${formatYuan(bonus)} 赠送金`}
          description={`赠送金有效期 ${options.giftValidDays} 天，支付时先于现金使用。`}
        />
      )}
      <div>
        <Typography.Text strong>支付方式</Typography.Text>
        <Radio.Group value={method} onChange={(e) => setMethod(e.target.value as Wallet)} style={{ display: 'flex', gap: 12, marginTop: 8 }}>
          <WalletOptions style={{ height: 44, lineHeight: '42px' }} />
        </Radio.Group>
      </div>
      <Flex align="center" gap={16}>
        <Button type="primary" size="large" disabled={!valid} loading={create.isPending} onClick={() => create.mutate()}>
          立即充值 {valid ? `¥${amount!.toFixed(2)}` : ''}
        </Button>
        {!valid && amount !== null && (
          <Typography.Text type="danger">
            请输入 {min} 到 {max} 元之间的金额
          </Typography.Text>
        )}
      </Flex>
    </Flex>
  );
}

function BalanceCard() {
  const money = useMoneyQuery();
  const { token } = theme.useToken();
  return (
    <Card title="当前余额">
      {money.isPending ? (
        <Skeleton active paragraph={{ rows: 2 }} />
      ) : money.isError ? (
        <Typography.Text type="secondary">余额暂不可用，请稍后刷新</Typography.Text>
      ) : (
        <Flex vertical gap={16}>
          <Statistic title="可用余额（元）" value={formatYuan(money.data.available ?? money.data.cash)} styles={{ content: { color: token.colorPrimary } }} />
          <Flex gap={32}>
            <Statistic title="现金" value={formatYuan(money.data.cash)} />
            <Statistic title="赠送金" value={formatYuan(money.data.gift ?? '0')} />
          </Flex>
        </Flex>
      )}
    </Card>
  );
}

function RechargeHistory({ onShow }: { onShow: (r: Recharge) => void }) {
  const { paging, set } = useUrlPaging();
  const list = usePagedQuery({
    queryKey: BILLING_KEYS.rechargeList(paging.page, paging.pageSize),
    queryFn: (signal) => billingApi.recharges(paging, signal),
  });
  return (
    <Card title="充值记录">
      <PagedTable<Recharge>
        list={list}
        paging={paging}
        onPage={set}
        empty="还没有充值记录"
        rowKey="id"
        tableLayout="auto"
        columns={[
          { title: '时间', dataIndex: 'createdAt', render: (v: string) => formatTime(v) },
          { title: '金额（元）', dataIndex: 'amount', align: 'right', render: (v: string) => formatYuan(v) },
          { title: '赠送金（元）', dataIndex: 'bonus', align: 'right', render: (v: string) => formatYuan(v) },
          { title: '支付方式', dataIndex: 'method', render: (v: Wallet) => PaymentMethod.label(v) },
          { title: '交易号', dataIndex: 'outTradeNo' },
          { title: '状态', dataIndex: 'status', render: (s: Recharge['status']) => <Tag color={STATUS[s].color}>{STATUS[s].text}</Tag> },
          {
            title: '操作',
            key: 'op',
            render: (_, r) =>
              r.status === 'Unpaid' && dayjs(r.expiresAt).isAfter(dayjs()) ? (
                <Button type="link" size="small" onClick={() => onShow(r)}>
                  继续支付
                </Button>
              ) : null,
          },
        ]}
      />
    </Card>
  );
}
